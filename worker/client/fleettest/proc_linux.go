package fleettest

import "syscall"

// procAttr has the kernel kill the worker when the test binary dies.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
