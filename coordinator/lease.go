package coordinator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/snowfleet/snowfleet/snowflake"
)

// reservedUntil is the reservation rule: a holder reserves Horizon past its
// clock, never below floor (the stored reservation found at claim, or the
// ceiling already confirmed), so a clock that stepped back never lowers it.
func (c *Coordinator) reservedUntil(now, floor int64) int64 {
	return max(now+c.cfg.Horizon.Milliseconds(), floor)
}

// readSlot reads a slot node; exists is false when the slot was never used.
func (s *session) readSlot(ctx context.Context, l *lease) (rec SlotRecord, exists bool, err error) {
	var (
		data []byte
		st   *zk.Stat
	)
	sp := SlotPath(s.c.cfg.Root, l.slot)
	err = s.c.call(ctx, 0, func() (err error) { data, st, err = s.conn.Get(sp); return })
	if errors.Is(err, zk.ErrNoNode) {
		return SlotRecord{}, false, nil
	}
	if err != nil {
		return SlotRecord{}, false, fmt.Errorf("read %s: %w", sp, err)
	}
	rec, err = decodeSlot(data)
	if err != nil {
		return SlotRecord{}, false, fmt.Errorf("%s: %w", sp, err)
	}
	rec.Version, rec.MtimeMs = st.Version, st.Mtime
	return rec, true, nil
}

// writeSlot writes rec, naming l's node as its holder, into l's slot node,
// fenced by l's lease node: with create the slot node is made (its first
// use), otherwise it is set at version.
func (s *session) writeSlot(ctx context.Context, l *lease, rec SlotRecord, version int32, create bool) (*zk.Stat, writeResult, error) {
	sp := SlotPath(s.c.cfg.Root, l.slot)
	rec.Holder = l.name
	data := encodeSlot(rec)
	var op any = &zk.SetDataRequest{Path: sp, Data: data, Version: version}
	if create {
		op = &zk.CreateRequest{Path: sp, Data: data, Acl: s.c.acl}
	}
	return s.fenced(ctx, l, op)
}

// writeResult classifies a fenced write.
type writeResult int

const (
	writeOK        writeResult = iota
	writeLeaseGone             // our lease node is gone: the lease is lost
	writeConflict              // the slot node changed (bad version, exists, vanished)
	writeUnknown               // no answer: the write may have landed
	writeFailed                // refused for another reason (auth, say)
)

// fenced runs Multi(Check(our lease node), op): op applies only while our
// lease node exists, so a holder that lost its lease (or a call resent on a
// new session after expiry) can never write the slot.
func (s *session) fenced(ctx context.Context, l *lease, op any) (*zk.Stat, writeResult, error) {
	var resp []zk.MultiResponse
	err := s.c.call(ctx, 0, func() (err error) {
		resp, err = s.conn.Multi(&zk.CheckVersionRequest{Path: l.path, Version: -1}, op)
		return err
	})
	switch {
	case err == nil:
		if len(resp) == 2 {
			return resp[1].Stat, writeOK, nil
		}
		return nil, writeOK, nil
	case unknownOutcome(err):
		return nil, writeUnknown, err
	}
	if len(resp) == 2 && errors.Is(resp[0].Error, zk.ErrNoNode) {
		return nil, writeLeaseGone, err
	}
	switch {
	case errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNodeExists):
		return nil, writeConflict, err
	case errors.Is(err, zk.ErrNoNode):
		if len(resp) == 2 && errors.Is(resp[1].Error, zk.ErrNoNode) {
			return nil, writeConflict, err // the slot node vanished (an operator?)
		}
		return nil, writeLeaseGone, err
	}
	return nil, writeFailed, err
}

// reserve makes the claim's fenced reservation: it reads the slot, waits
// for the clock to pass the stored reservation R, then writes
// reservedUntil(now, R) fenced by our lease node. false means the lease is
// given up (lost, or the wait was too long) and its node deleted.
func (s *session) reserve(ctx context.Context, l *lease) (bool, error) {
	c := s.c
	attempted := false // a write of ours may have landed
	var seenVersion int32 = -2
	for {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		if s.conn.SessionID() != l.session {
			return false, nil // the session, and our node with it, is gone
		}
		rec, exists, err := s.readSlot(ctx, l)
		if err != nil {
			if fatal(err) {
				return false, err
			}
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		if exists && rec.Holder == l.name {
			// Our own write landed although its answer was lost: adopt it.
			l.version, l.ceiling = rec.Version, rec.ReservedUntilMs
			return true, nil
		}
		version := int32(-1)
		if exists {
			version = rec.Version
		}
		if attempted && version != seenVersion {
			c.log.Warn("slot written by another holder during our claim", "slot", l.slot, "holder", rec.Holder)
			s.deleteLease(ctx, l)
			return false, nil
		}
		seenVersion = version
		if !exists {
			// First use of the slot: no stored reservation to stay above.
			now := c.nowMs()
			target := c.reservedUntil(now, 0)
			attempted = true
			_, res, err := s.writeSlot(ctx, l, SlotRecord{ReservedUntilMs: target, UpdatedMs: now}, version, true)
			switch res {
			case writeOK:
				l.floor, l.version, l.ceiling = 0, 0, target
				return true, nil
			case writeLeaseGone:
				return false, nil
			case writeFailed:
				if fatal(err) {
					return false, err
				}
				c.log.Warn("cannot create slot node", "slot", l.slot, "error", err)
				sleep(ctx, 200*time.Millisecond)
			}
			continue // conflict, unknown: read again
		}
		R := rec.ReservedUntilMs
		l.floor = R
		if !s.waitPast(ctx, l, R) {
			s.deleteLease(ctx, l)
			return false, nil
		}
		now := c.nowMs()
		target := c.reservedUntil(now, R)
		attempted = true
		sent := time.Now()
		sendMs := c.nowMs()
		st, res, err := s.writeSlot(ctx, l, SlotRecord{ReservedUntilMs: target, UpdatedMs: now}, version, false)
		switch res {
		case writeOK:
			c.observeWrite(st, sendMs, c.nowMs(), sent)
			l.version, l.ceiling = st.Version, target
			return true, nil
		case writeLeaseGone:
			return false, nil
		case writeFailed:
			if fatal(err) {
				return false, err
			}
			c.log.Warn("cannot write slot reservation", "slot", l.slot, "error", err)
			sleep(ctx, 200*time.Millisecond)
			attempted = false
		}
	}
}

// waitPast waits until the clock is past R, the stored reservation; false
// if that is further than MaxReservationWait (a clock behind, or a horizon
// longer than the wait): the slot is then avoided for that long.
func (s *session) waitPast(ctx context.Context, l *lease, R int64) bool {
	c := s.c
	gap := time.Duration(R-c.nowMs()) * time.Millisecond
	if gap < 0 {
		return true
	}
	if gap > c.cfg.MaxReservationWait {
		c.log.Info("slot is reserved too far past our clock; trying another",
			"slot", l.slot, "reserved_until", time.UnixMilli(R).UTC(), "wait", gap, "max_wait", c.cfg.MaxReservationWait)
		if s.avoid == nil {
			s.avoid = map[snowflake.Slot]time.Time{}
		}
		// Not for the whole gap: the clock may be put right meanwhile.
		s.avoid[l.slot] = time.Now().Add(min(gap, max(c.cfg.MaxReservationWait, time.Second)))
		return false
	}
	c.log.Info("waiting for the clock to pass the slot's reservation", "slot", l.slot, "wait", gap)
	deadline := time.Now().Add(c.cfg.MaxReservationWait + time.Second)
	for {
		now := c.nowMs()
		if now > R {
			return true
		}
		if time.Now().After(deadline) {
			return false // the clock moved back while we waited
		}
		if !sleep(ctx, min(time.Duration(R-now+1)*time.Millisecond, 100*time.Millisecond)) {
			return false
		}
	}
}

// observeWrite records the renew latency and the skew of the ZooKeeper
// leader's mtime against our [send, receive] window.
func (c *Coordinator) observeWrite(st *zk.Stat, sendMs, recvMs int64, sent time.Time) {
	c.m.renew.Observe(time.Since(sent).Seconds())
	if st == nil {
		return
	}
	c.mtimeMs.Store(st.Mtime)
	var skew int64
	switch {
	case st.Mtime < sendMs:
		skew = st.Mtime - sendMs
	case st.Mtime > recvMs:
		skew = st.Mtime - recvMs
	}
	if old := c.skewMs.Swap(skew); abs(skew) > c.cfg.MaxSkew.Milliseconds() && abs(old) <= c.cfg.MaxSkew.Milliseconds() {
		c.log.Warn("clock skew against the zookeeper leader beyond bound; not ready",
			"skew", time.Duration(skew)*time.Millisecond, "max_skew", c.cfg.MaxSkew)
	}
	c.m.skew.Set(float64(skew) / 1000)
}

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
		st, res, err := s.writeSlot(ctx, l, SlotRecord{ReservedUntilMs: target, LastMs: last, UpdatedMs: now}, l.version, false)
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
		}
		// Bad version: if our earlier unanswered write landed, the slot still
		// names us; adopt its version and reservation and write again.
		c.m.renewErrors.WithLabelValues("bad_version").Inc()
		rec, exists, err := s.readSlot(ctx, l)
		if err != nil {
			return writeUnknown
		}
		if !exists || rec.Holder != l.name || attempt >= 3 {
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

// release seals the generator, lowers the reservation to the highest
// timestamp this holder could have used (never below what it found), and
// deletes the lease node, so a successor starts at once. It is bounded by
// ReleaseTimeout; on timeout the stored reservation stays and a successor
// waits it out.
func (s *session) release(l *lease, gen *snowflake.Generator) {
	c := s.c
	c.setState(StateReleasing)
	last := gen.Seal()
	c.gen.Store(nil)
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.ReleaseTimeout)
	defer cancel()
	target := max(last, l.floor)
	var issued int64
	if gen.Issued() > 0 {
		issued = last
	}
	lowered := false
	for attempt := 0; attempt < 2 && ctx.Err() == nil; attempt++ {
		lowest := SlotRecord{ReservedUntilMs: target, LastMs: issued, UpdatedMs: c.nowMs()}
		_, res, _ := s.writeSlot(ctx, l, lowest, l.version, false)
		if res == writeOK {
			lowered = true
			break
		}
		if res != writeConflict {
			break
		}
		rec, exists, err := s.readSlot(ctx, l)
		if err != nil || !exists || rec.Holder != l.name {
			break
		}
		l.version = rec.Version
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
