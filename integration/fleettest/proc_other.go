//go:build !linux

package fleettest

import "syscall"

// workerProcAttr: elsewhere than Linux a worker is an ordinary child, so that
// the package builds there; a test binary that dies without cleanup can leave
// its workers running.
func workerProcAttr() *syscall.SysProcAttr { return nil }
