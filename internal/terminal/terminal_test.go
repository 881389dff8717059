package terminal

import (
	"bytes"
	"os"
	"testing"
)

// TestIs: a buffer and a regular file are not terminals; /dev/tty-like
// character devices are (/dev/null is one).
func TestIs(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if Is(&bytes.Buffer{}) || Is(f) || !Is(null) {
		t.Fatalf("buffer %v, file %v, %s %v; want false, false, true", Is(&bytes.Buffer{}), Is(f), os.DevNull, Is(null))
	}
}
