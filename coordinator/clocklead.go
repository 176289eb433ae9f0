package coordinator

import "github.com/snowfleet/snowfleet/snowflake"

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
