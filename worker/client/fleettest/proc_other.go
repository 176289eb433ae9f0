//go:build !linux

package fleettest

import "syscall"

// procAttr: no death signal outside Linux; the test's cleanup kills the
// worker.
func procAttr() *syscall.SysProcAttr { return nil }
