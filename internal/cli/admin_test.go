package cli

import (
	"net"
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
	appendConfig(t, cfg, "admin: {addr: \""+ln.Addr().String()+"\"}\n")
	code, _, errOut := cliRun(t, "run", "--config", cfg)
	if code != 1 || !strings.Contains(errOut, ln.Addr().String()) || !strings.Contains(errOut, "admin.addr") {
		t.Fatalf("herald run on a taken admin address: exit %d, stderr %q", code, errOut)
	}
}
