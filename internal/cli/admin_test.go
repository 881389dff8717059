package cli

import (
	"net"
	"os"
	"strings"
	"testing"
)

// Rule: `herald run` refuses to start when its admin address is taken,
// with an error naming admin.addr and how to turn it off.
func TestRunFailsOnTakenAdminAddr(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "")
	f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("admin: {addr: \"" + ln.Addr().String() + "\"}\n")
	f.Close()
	code, _, errOut := cliRun(t, "run", "--config", cfg)
	if code != 1 || !strings.Contains(errOut, ln.Addr().String()) || !strings.Contains(errOut, "admin.addr") {
		t.Fatalf("herald run on a taken admin address: exit %d, stderr %q", code, errOut)
	}
}
