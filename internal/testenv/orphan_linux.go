//go:build linux

package testenv

import (
	"os/exec"
	"syscall"
)

// OrphanGuard has the kernel send the server's script SIGTERM, which stops
// the node cleanly, if the test binary dies without its cleanups (a panic,
// a -timeout): otherwise the node would keep running, ports held.
func OrphanGuard(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
