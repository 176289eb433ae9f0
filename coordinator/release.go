package coordinator

import (
	"context"
	"time"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/snowflake"
)

// release seals the generator, lowers the reservation to the highest
// timestamp this holder could have used (never below what it found), and
// deletes the lease node, so a successor starts at once. It is bounded by
// ReleaseTimeout from the cancel; on timeout the stored reservation stays
// and a successor waits it out.
func (s *leaseLoop) release(l *wonLease, gen *snowflake.Generator) {
	c := s.c
	c.setState(StateReleasing)
	last := gen.Seal()
	c.dropGenerator(gen)
	ctx, cancel := context.WithDeadline(context.Background(), c.stopAt().Add(c.cfg.ReleaseTimeout))
	defer cancel()
	target := max(last, l.floor)
	var issued int64
	if gen.Issued() > 0 {
		issued = last
	}
	lowered := false
	l.releasing = true
	for attempt := 0; attempt < 2 && ctx.Err() == nil; attempt++ {
		lowest := tree.SlotRecord{ReservedUntilMs: target, LastMs: issued, UpdatedMs: c.nowMs()}
		_, res, _ := s.writeSlot(ctx, l, lowest, l.version)
		if res == writeOK {
			lowered = true
			break
		}
		if res != writeConflict {
			break
		}
		if _, ours, err := s.adoptIfOurs(ctx, l); err != nil || !ours {
			break
		}
	}
	deleted := s.deletePath(ctx, l.path)
	c.mu.Lock()
	c.lease = nil
	c.mu.Unlock()
	if lowered && deleted {
		c.log.Info("released slot", "slot", l.slot, "reserved_until", time.UnixMilli(target).UTC(), "issued", gen.Issued())
	} else {
		c.log.Warn("released slot without zookeeper: the stored reservation stands and a successor waits it out",
			"slot", l.slot, "lowered", lowered, "deleted", deleted, "ceiling", time.UnixMilli(l.ceiling).UTC())
	}
}
