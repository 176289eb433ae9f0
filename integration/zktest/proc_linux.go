package zktest

import "syscall"

// serverProcAttr puts the server in a process group of its own, which Stop
// kills whole, and makes it die with the test binary even if cleanup never
// runs (Pdeathsig exists on Linux only).
func serverProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

// killGroup kills the server's process group.
func killGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }
