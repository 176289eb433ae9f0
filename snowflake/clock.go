package snowflake

import (
	"time"
)

// Clock is the generator's source of time. Tests inject one that they can step
// backwards and forwards; production uses SystemClock.
type Clock interface {
	// UnixNano is the current wall-clock time in Unix nanoseconds.
	UnixNano() int64
	// Sleep blocks for about d. The generator sleeps instead of spinning when
	// it must wait for the clock; it needs sub-millisecond precision to keep
	// up with the format's 4,096 IDs per millisecond.
	Sleep(d time.Duration)
}

// SystemClock is the machine's wall clock.
type SystemClock struct{}

// UnixNano implements Clock, with the cheapest read of the wall clock the
// platform has (wallNanos).
func (SystemClock) UnixNano() int64 { return wallNanos() }

// Sleep implements Clock. The Go runtime rounds short timer sleeps up to a
// whole millisecond when it is idle, which would cost an eighth of the
// format's throughput, and a scheduler-aware syscall doubles the CPU of each
// wakeup (its P is handed to another thread). Waits shorter than 2 ms are
// therefore a raw sleep on this thread (sleepShort); longer ones are
// time.Sleep.
func (SystemClock) Sleep(d time.Duration) {
	if d <= 0 {
		return
	}
	if d >= 2*time.Millisecond {
		time.Sleep(d)
		return
	}
	sleepShort(d)
}
