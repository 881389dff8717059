package rabbitenv

import (
	"net"
	"testing"
)

// TestRabbitNodeMovesOffATakenPort: a node whose port another process took
// between FreePort and its first boot boots on new ports.
func TestRabbitNodeMovesOffATakenPort(t *testing.T) {
	n := NewRabbitNode(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := ln.Addr().(*net.TCPAddr).Port
	n.port = taken // as if the port FreePort gave had been taken meanwhile
	n.writeConfig(t)
	n.Start(t)
	if n.port == taken {
		t.Fatalf("node booted on port %d, which the test holds", taken)
	}
	t.Logf("port %d taken; the node booted on %d", taken, n.port)
}
