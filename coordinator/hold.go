package coordinator

import (
	"context"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/snowfleet/snowfleet/snowflake"
)

// hold serves the lease until it is lost or ctx ends (then it releases).
func (s *session) hold(ctx context.Context, l *lease) {
	c := s.c
	floor := l.floor
	if floor < snowflake.MinUnixMs {
		floor = 0
	}
	gen, err := snowflake.NewGenerator(snowflake.Config{Slot: l.slot, Floor: floor, Ceiling: l.ceiling,
		MaxRollbackWait: c.cfg.MaxRollbackWait, Clock: c.clock})
	if err != nil {
		// Only a reservation outside the ID's time range gets here.
		c.log.Error("cannot make a generator for the lease", "slot", l.slot, "error", err)
		s.deleteLease(ctx, l)
		sleep(ctx, time.Second)
		return
	}
	c.mu.Lock()
	c.lease = l
	c.mu.Unlock()
	c.gen.Store(gen)
	c.setState(StateServing)
	c.log.Info("serving slot", "slot", l.slot, "lease", l.name,
		"floor_ms", l.floor, "ceiling", time.UnixMilli(l.ceiling).UTC())

	t := time.NewTicker(c.cfg.Renew)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			s.release(l, gen)
			return
		case <-t.C:
		case <-c.wake:
		}
		zs := zk.State(c.zkState.Load())
		if sid := s.conn.SessionID(); sid != l.session || zs == zk.StateExpired {
			s.lost(ctx, l, gen, "expired", false)
			return
		}
		if zs != zk.StateHasSession {
			c.setState(StateDisconnected)
			continue
		}
		switch s.renew(ctx, l, gen) {
		case writeOK:
			c.setState(StateServing)
		case writeUnknown:
			c.setState(StateDisconnected) // serving up to the confirmed ceiling
		case writeLeaseGone:
			s.lost(ctx, l, gen, "node_gone", false)
			return
		case writeConflict:
			s.lost(ctx, l, gen, "taken", true)
			return
		case writeNoSlot:
			s.lost(ctx, l, gen, "slot_missing", true)
			s.slotMissing(l)
			return
		}
	}
}

// renew raises the reservation to reservedUntil(now, confirmed ceiling) —
// never lower, whatever the clock did — and records the last issued
// timestamp. The generator's ceiling moves only after the write is
// confirmed.
func (s *session) renew(ctx context.Context, l *lease, gen *snowflake.Generator) writeResult {
	c := s.c
	for attempt := 0; ; attempt++ {
		now := c.nowMs()
		target := c.reservedUntil(now, l.ceiling)
		var last int64
		if gen.Issued() > 0 {
			last = gen.LastMs()
		}
		sent := time.Now()
		st, res, err := s.writeSlot(ctx, l, SlotRecord{ReservedUntilMs: target, LastMs: last, UpdatedMs: now}, l.version)
		switch res {
		case writeOK:
			c.observeWrite(st, now, c.nowMs(), sent)
			l.version, l.ceiling = st.Version, target
			gen.SetCeiling(target)
			return writeOK
		case writeUnknown:
			c.m.renewErrors.WithLabelValues("unknown").Inc()
			c.log.Debug("renew got no answer; serving up to the confirmed ceiling",
				"slot", l.slot, "ceiling", time.UnixMilli(l.ceiling).UTC(), "error", err)
			return writeUnknown
		case writeLeaseGone:
			c.m.renewErrors.WithLabelValues("lost").Inc()
			return writeLeaseGone
		case writeFailed:
			c.m.renewErrors.WithLabelValues("failed").Inc()
			c.log.Warn("renew refused", "slot", l.slot, "error", err)
			return writeFailed
		case writeNoSlot:
			c.m.renewErrors.WithLabelValues("slot_missing").Inc()
			return writeNoSlot
		}
		// Bad version: if our earlier unanswered write landed, the slot still
		// names us; adopt its version and reservation and write again.
		c.m.renewErrors.WithLabelValues("bad_version").Inc()
		rec, exists, err := s.readSlot(ctx, l)
		if err != nil {
			return writeUnknown
		}
		if !exists {
			return writeNoSlot
		}
		if rec.Holder != l.name || attempt >= 3 {
			c.log.Warn("slot written by another holder", "slot", l.slot, "holder", rec.Holder, "exists", exists)
			return writeConflict
		}
		l.version = rec.Version
		l.ceiling = max(l.ceiling, rec.ReservedUntilMs)
		gen.SetCeiling(l.ceiling)
	}
}

// lost stops serving at once: the generator is sealed before anything else.
func (s *session) lost(ctx context.Context, l *lease, gen *snowflake.Generator, reason string, deleteNode bool) {
	c := s.c
	last := gen.Seal()
	c.gen.Store(nil)
	c.m.losses.WithLabelValues(reason).Inc()
	c.losses.Add(1)
	c.log.Warn("lease lost; claiming again", "slot", l.slot, "lease", l.name, "reason", reason,
		"last_issued", time.UnixMilli(last).UTC(), "ceiling", time.UnixMilli(l.ceiling).UTC())
	if deleteNode {
		s.deleteLease(ctx, l)
	}
	c.mu.Lock()
	c.lease = nil
	c.mu.Unlock()
}
