//go:build !linux

package relay

import "os/exec"

// orphanGuard does nothing here: only Linux has a parent-death signal.
func orphanGuard(*exec.Cmd) {}
