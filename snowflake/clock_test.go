package snowflake

import (
	"sync"
	"sync/atomic"
	"time"
)

// stepClock is a Clock the test moves by hand. Sleep advances it by the time
// asked for, as a real sleep would, and counts the calls so a test can see
// that the generator slept rather than spun.
type stepClock struct {
	mu     sync.Mutex
	ns     int64
	sleeps atomic.Int64
	reads  atomic.Int64
}

func newStepClock(unixMs int64) *stepClock { return &stepClock{ns: unixMs * int64(time.Millisecond)} }

func (c *stepClock) UnixNano() int64 {
	c.reads.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ns
}

func (c *stepClock) Sleep(d time.Duration) {
	c.sleeps.Add(1)
	c.Step(d)
}

// Step moves the clock by d, backwards when d < 0.
func (c *stepClock) Step(d time.Duration) {
	c.mu.Lock()
	c.ns += int64(d)
	c.mu.Unlock()
}

// frozenClock never moves, even in Sleep: it shows that a generator fails
// fast instead of waiting when waiting cannot help.
type frozenClock struct{ ns int64 }

func (c frozenClock) UnixNano() int64       { return c.ns }
func (c frozenClock) Sleep(d time.Duration) { time.Sleep(d) }
