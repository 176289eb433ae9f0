//go:build unix

package fleettest

import "syscall"

// Pause stops the process (SIGSTOP) as a long GC pause or a frozen VM
// would: its sockets stay open, it answers nothing. Resume continues it.
func (w *Worker) Pause() { _ = w.cmd.Process.Signal(syscall.SIGSTOP) }

// Resume continues a paused worker (SIGCONT).
func (w *Worker) Resume() { _ = w.cmd.Process.Signal(syscall.SIGCONT) }
