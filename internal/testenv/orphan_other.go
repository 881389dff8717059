//go:build !linux

package testenv

import "os/exec"

// OrphanGuard does nothing here: only Linux has a parent-death signal.
func OrphanGuard(*exec.Cmd) {}
