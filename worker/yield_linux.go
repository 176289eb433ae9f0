package worker

import "syscall"

// yieldCore gives the calling thread's core to another thread the kernel
// has waiting for it, if any (sched_yield); alone on its core, the thread
// is back at once, under a microsecond. The Go scheduler's yield
// (runtime.Gosched) cannot do this: it only runs another goroutine on the
// same thread.
func yieldCore() { _, _, _ = syscall.RawSyscall(syscall.SYS_SCHED_YIELD, 0, 0, 0) }
