package snowflake

import (
	"syscall"
	"time"
	"unsafe"
)

const (
	clockMonotonic = 1 // CLOCK_MONOTONIC
	timerAbstime   = 1 // TIMER_ABSTIME
)

// sleepShort sleeps d on this thread without telling the scheduler, which
// keeps a wakeup at about half the CPU of a scheduler-aware syscall. The
// thread keeps its P meanwhile, so only the one goroutine that waits for a
// generator's next millisecond does it, and never for 2 ms or more.
//
// Two things make that safe. The sleep is to an absolute deadline on the
// monotonic clock: a relative nanosleep restarted after each signal gains
// the kernel's timer slack every time, and the runtime's preemption signals
// (sent every few microseconds while it stops the world for a GC) then keep
// it from ever ending — a stall of seconds seen in this package's tests. And
// after a signal the loop returns to Go code through rawSleepUntil's
// prologue, a preemption point, so a stop-the-world waits microseconds for
// this thread, not the rest of the sleep.
func sleepShort(d time.Duration) {
	var now syscall.Timespec
	if _, _, e := syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockMonotonic, uintptr(unsafe.Pointer(&now)), 0); e != 0 {
		time.Sleep(d)
		return
	}
	deadline := syscall.NsecToTimespec(now.Nano() + int64(d))
	for rawSleepUntil(&deadline) == syscall.EINTR {
	}
}

// rawSleepUntil is not inlined so that each call passes a stack check, where
// the runtime can stop this goroutine.
//
//go:noinline
func rawSleepUntil(deadline *syscall.Timespec) syscall.Errno {
	_, _, e := syscall.RawSyscall6(syscall.SYS_CLOCK_NANOSLEEP, clockMonotonic, timerAbstime,
		uintptr(unsafe.Pointer(deadline)), 0, 0, 0)
	return e
}
