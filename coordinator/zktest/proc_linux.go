package zktest

import (
	"os"
	"syscall"
)

// procAttr puts the server in a process group of its own and has the kernel
// kill it when the test binary dies.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

// killGroup kills the server's process group: whatever it started too.
func killGroup(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGKILL) }
