package coordinator

import (
	"time"

	"github.com/snowfleet/snowfleet/snowflake"
)

// dropGenerator takes a sealed generator out of service, keeping its count
// of IDs issued on a logical clock for logicalIssued.
func (c *Coordinator) dropGenerator(g *snowflake.Generator) {
	c.gen.Store(nil)
	c.logicalDone.Add(g.LogicalIssued())
}

// logicalIssued is how many IDs this process issued on a logical clock
// (snowflake.Logical, the clock behind), over every lease it held.
func (c *Coordinator) logicalIssued() uint64 {
	n := c.logicalDone.Load()
	if g := c.gen.Load(); g != nil {
		n += g.LogicalIssued()
	}
	return n
}

// leadSeconds is how far the last issued timestamp is ahead of the clock.
func (c *Coordinator) leadSeconds() float64 {
	if g := c.gen.Load(); g != nil {
		return float64(g.LeadMs()) / 1000
	}
	return 0
}

// clockSteps notices the wall clock being stepped: between two looks, how
// far the wall clock moved beyond (or short of) the monotonic clock. NTP
// slews by at most 0.5 ms a second, so a difference of stepMin or more is a
// step. It is read by the holder's loop only.
type clockSteps struct {
	wall int64     // c.clock at the last look, ns
	mono time.Time // the monotonic clock then
}

// stepMin is the smallest difference counted as a step.
const stepMin = 10 * time.Millisecond

// observeClock compares the wall clock with the monotonic one since the
// last look and records a step: a forward one leaves a gap in the slot's
// timeline (harmless), a backward one is what --on-clock-back rides out.
func (c *Coordinator) observeClock(cs *clockSteps) {
	wall, mono := c.clock.UnixNano(), time.Now()
	if !cs.mono.IsZero() {
		step := time.Duration(wall-cs.wall) - mono.Sub(cs.mono)
		switch {
		case step >= stepMin:
			c.m.steps.WithLabelValues("forward").Inc()
			if int64(step) > c.maxForward.Load() {
				c.maxForward.Store(int64(step))
			}
			c.log.Warn("the clock stepped forward: IDs of this slot skip that stretch of time", "step", step)
		case step <= -stepMin:
			c.m.steps.WithLabelValues("back").Inc()
			c.log.Warn("the clock stepped back", "step", -step, "on_clock_back", c.cfg.OnClockBack)
		}
	}
	cs.wall, cs.mono = wall, mono
}
