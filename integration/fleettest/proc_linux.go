package fleettest

import "syscall"

// workerProcAttr makes a worker die with the test binary even if cleanup
// never runs (Pdeathsig exists on Linux only).
func workerProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
