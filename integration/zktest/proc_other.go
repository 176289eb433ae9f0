//go:build !linux

package zktest

import "syscall"

// serverProcAttr: elsewhere than Linux the server is an ordinary child, so
// that the package builds there; a test binary that dies without cleanup can
// leave its server running.
func serverProcAttr() *syscall.SysProcAttr { return nil }

// killGroup: no group of its own; Stop kills the process itself.
func killGroup(int) {}
