package testenv

import (
	"net"
	"os"
	"testing"
)

// FileExists reports whether path names something on disk.
func FileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// FreePort returns a loopback port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
