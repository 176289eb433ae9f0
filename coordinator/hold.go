package coordinator

import (
	"context"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/hashicorp/go-hclog"
	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/snowflake"
)

// orphanRelist is how often a holder with orphans outstanding (creates
// whose answer was lost) lists leases/ to delete them when they appear, and
// deletes the standby nodes of ours its renews' listings of standby/ found.
const orphanRelist = 5 * time.Second

// runServing is the serving state: it serves the lease claiming won
// (s.won) and renews it, until it is lost (then claiming) or ctx ends
// (then it releases it: done). A session the ensemble refused stops the
// serving at once (sessionRefused).
func (s *leaseLoop) runServing(ctx context.Context) leaseState {
	c := s.c
	l := s.won
	s.won = nil
	floor := l.floor
	if floor < snowflake.MinUnixMs {
		floor = 0
	}
	gen, err := snowflake.NewGenerator(c.cfg.generatorConfig(l.slot, floor, l.ceiling))
	if err != nil {
		// Only a reservation outside the ID's time range gets here.
		c.log.Error("cannot make a generator for the lease", "slot", l.slot, "error", err)
		s.deleteLease(ctx, l)
		sleep(ctx, time.Second)
		return claiming
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
	orphanTick := time.NewTicker(orphanRelist)
	defer orphanTick.Stop()
	var (
		steps clockSteps
		away  outage
	)
	c.observeClock(&steps)
	for {
		select {
		case <-ctx.Done():
			s.release(l, gen)
			return done
		case <-t.C:
		case <-c.wake:
		case <-orphanTick.C:
			if ctx.Err() == nil && len(s.orphans) > 0 {
				// A create of ours whose answer was lost may land after
				// our last listing, even on a later session: look again.
				if names, err := s.list(ctx); err == nil {
					s.cleanOrphans(ctx, names)
				}
			}
			if ctx.Err() == nil && len(s.standbys.orphans) > 0 {
				s.standbys.cleanOrphans(ctx)
			}
			continue
		}
		// Cancellation first: a tick due at the same moment must not send
		// a renew that races the release's write.
		if ctx.Err() != nil {
			s.release(l, gen)
			return done
		}
		c.observeClock(&steps)
		if c.refused.Load() {
			// The ensemble went back in time: it may hand our slot out
			// from an older reservation, so stop issuing now.
			s.lost(ctx, l, gen, "rolled_back", false)
			return sessionRefused
		}
		zs := zk.State(c.zkState.Load())
		if sid := s.conn.SessionID(); sid != l.session || zs == zk.StateExpired {
			s.lost(ctx, l, gen, "expired", false)
			return claiming
		}
		if zs != zk.StateHasSession {
			away.gone(c, l, zs.String())
			continue
		}
		s.standbys.list(ctx) // a standby waiting shortens this renew
		res, err := s.renew(ctx, l, gen)
		u, _ := unusableSlot(err) // why the slot cannot be served, if it cannot
		switch res {
		case writeOK:
			away.back(c, l)
		case writeUnknown:
			away.gone(c, l, "no answer to the renew") // serving up to the confirmed ceiling
		case writeServerError:
			// Connected, but the server refused this write for a reason of
			// its own (a quota, throttling): keep serving up to the
			// confirmed ceiling and write again at the next renew.
		case writeLeaseGone:
			s.lost(ctx, l, gen, "node_gone", false)
			return claiming
		case writeConflict:
			reason := "taken"
			if u != nil {
				s.avoidSlot(u) // the slot node does not decode
				reason = "undecodable"
			}
			s.lost(ctx, l, gen, reason, true)
			return claiming
		case writeFailed:
			// Refused (the slot node's ACL changed): the ceiling can no longer
			// be raised, so the lease is worth nothing; claim one we can keep.
			s.avoidSlot(u)
			s.lost(ctx, l, gen, "refused", true)
			return claiming
		case writeNoSlot:
			s.lost(ctx, l, gen, "slot_missing", true)
			s.avoidSlot(u)
			return claiming
		}
	}
}

// renew raises the reservation to reservedUntil(now, confirmed ceiling) —
// never lower, whatever the clock did — and records the last issued
// timestamp. The generator's ceiling moves up only after the write is
// confirmed.
//
// While a standby waits for our range (see standby.go) the horizon is
// StandbyHorizon, and a reservation further ahead than that is lowered, in
// the order release lowers one: the generator's ceiling first (never below
// its last issued timestamp), then the fenced write of that value. An
// unknown outcome leaves the higher value stored, which only delays a
// successor; the generator already stops at the lower one.
func (s *leaseLoop) renew(ctx context.Context, l *wonLease, gen *snowflake.Generator) (writeResult, error) {
	c := s.c
	waiting := s.standbys.waitingFor(l.slot.Datacenter)
	h := c.horizonFor(waiting)
	if waiting != s.shortened {
		s.shortened = waiting
		c.log.Info("reservation horizon changed: a standby waits for our range", "slot", l.slot,
			"standby_waiting", waiting, "horizon", h)
	}
	c.m.horizon.Set(h.Seconds())
	for attempt := 0; ; attempt++ {
		now := c.nowMs()
		target := c.reservedUntilH(now, l.ceiling, h)
		if want := c.reservedUntilH(now, l.floor, h); waiting && want < l.ceiling {
			// Shorten: nothing below l.floor (what earlier holders may
			// have issued) nor below what we issued (LowerCeiling).
			l.ceiling = gen.LowerCeiling(want)
			target = l.ceiling
		}
		var last int64
		if gen.Issued() > 0 {
			last = gen.LastMs()
		}
		sent := time.Now()
		st, res, err := s.writeSlot(ctx, l, tree.SlotRecord{ReservedUntilMs: target, LastMs: last, UpdatedMs: now}, l.version)
		switch res {
		case writeOK:
			c.observeWrite(st, now, c.nowMs(), sent)
			l.version, l.ceiling = st.Version, target
			gen.SetCeiling(target)
			if s.serverErrs > 0 {
				c.log.Info("renew landed again after server errors", "slot", l.slot, "errors", s.serverErrs)
				s.serverErrs = 0
			}
			return writeOK, nil
		case writeUnknown:
			c.m.renewErrors.WithLabelValues("unknown").Inc()
			c.log.Debug("renew got no answer; serving up to the confirmed ceiling",
				"slot", l.slot, "ceiling", time.UnixMilli(l.ceiling).UTC(), "error", err)
			return writeUnknown, err
		case writeLeaseGone:
			c.m.renewErrors.WithLabelValues("lost").Inc()
			return writeLeaseGone, err
		case writeFailed:
			c.m.renewErrors.WithLabelValues("failed").Inc()
			return writeFailed, refusedSlot(l.slot, err)
		case writeServerError:
			// Unknown outcome: l.version stays, so if it did land the next
			// write meets a bad version and adopts it below.
			c.m.renewErrors.WithLabelValues("server").Inc()
			s.serverErrs++
			lvl := hclog.Debug
			if s.serverErrs == 1 {
				lvl = hclog.Warn // once a streak; the metric counts them all
			}
			c.log.Log(lvl, "zookeeper answered the renew with an error; serving up to the confirmed ceiling and retrying",
				"slot", l.slot, "ceiling", time.UnixMilli(l.ceiling).UTC(), "error", err)
			return writeServerError, err
		case writeNoSlot:
			c.m.renewErrors.WithLabelValues("slot_missing").Inc()
			return writeNoSlot, missingSlot(c.cfg.Root, l.slot)
		}
		// Bad version: if our earlier unanswered write landed, the slot still
		// names us; adopt its version and reservation and write again.
		c.m.renewErrors.WithLabelValues("bad_version").Inc()
		rec, ours, err := s.adoptIfOurs(ctx, l)
		u, unusable := unusableSlot(err)
		switch {
		case unusable && u.why == slotMissing:
			return writeNoSlot, u
		case unusable:
			return writeConflict, u // the slot node does not decode
		case err != nil:
			return writeUnknown, err
		case !ours || attempt >= 3:
			c.log.Warn("slot written by another holder", "slot", l.slot, "holder", rec.Holder, "exists", true)
			return writeConflict, nil
		}
		l.ceiling = max(l.ceiling, rec.ReservedUntilMs)
		gen.SetCeiling(l.ceiling)
	}
}

// lost stops serving at once: the generator is sealed before anything else.
func (s *leaseLoop) lost(ctx context.Context, l *wonLease, gen *snowflake.Generator, reason string, deleteNode bool) {
	c := s.c
	last := gen.Seal()
	c.dropGenerator(gen)
	c.m.losses.WithLabelValues(reason).Inc()
	c.log.Warn("lease lost; claiming again", "slot", l.slot, "lease", l.name, "reason", reason,
		"last_issued", time.UnixMilli(last).UTC(), "ceiling", time.UnixMilli(l.ceiling).UTC())
	if deleteNode {
		s.deleteLease(ctx, l)
	}
	s.keepLost(l, reason, last)
	c.mu.Lock()
	c.lease = nil
	c.mu.Unlock()
}
