package coordinator

import (
	"context"
	"errors"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/snowflake"
)

// reservation is how a claim's first reservation (reserve) ended.
type reservation int

const (
	// reserved: a fenced write of ours confirmed the reservation (or one
	// whose answer was lost is found landed): the lease may serve.
	reserved reservation = iota + 1
	// reserveGaveUp: the lease is given up, its node gone with our session
	// or deleted (another holder wrote the slot, the clock moved back
	// while we waited, ctx ended meanwhile): claim again.
	reserveGaveUp
	// reserveUnusable: the slot cannot be served; the error is its
	// *slotUnusable (refused, undecodable, missing, reserved too far
	// ahead). The claim avoids the slot and deletes the node.
	reserveUnusable
	// reserveFailed: the error wraps ErrDamaged (slots/ or more is
	// missing: the root is read again), is a fault retrying cannot fix,
	// or is ctx's.
	reserveFailed
)

// reserve makes the claim's fenced reservation: it reads the slot, waits
// for the clock to pass the stored reservation R, then writes
// reservedUntil(now, R) fenced by our lease node.
func (s *leaseLoop) reserve(ctx context.Context, l *wonLease) (reservation, error) {
	c := s.c
	if err := s.slotTrusted(ctx, l.slot); err != nil {
		return reserveUnusable, refusedSlot(l.slot, err)
	}
	attempted := false // a write of ours may have landed
	var seenVersion int32 = -2
	for {
		if ctx.Err() != nil {
			return reserveFailed, ctx.Err()
		}
		if s.conn.SessionID() != l.session {
			return reserveGaveUp, nil // the session, and our node with it, is gone
		}
		rec, ours, err := s.adoptIfOurs(ctx, l)
		u, unusable := unusableSlot(err)
		missing := unusable && u.why == slotMissing
		switch {
		case missing:
		case unusable:
			return reserveUnusable, u // the slot node does not decode
		case errors.Is(err, zk.ErrNoAuth):
			return reserveUnusable, refusedSlot(l.slot, err)
		case fatal(err):
			return reserveFailed, err
		case err != nil:
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		if ours {
			// Our own write landed although its answer was lost: adopt it.
			l.ceiling, l.czxid = rec.ReservedUntilMs, rec.Czxid
			return reserved, nil
		}
		version := int32(-1)
		if !missing {
			version = rec.Version
		}
		if attempted && version != seenVersion {
			c.log.Warn("slot written by another holder during our claim", "slot", l.slot, "holder", rec.Holder)
			s.deleteLease(ctx, l)
			return reserveGaveUp, nil
		}
		seenVersion = version
		if missing {
			// Every slot node exists from the root's creation on: its
			// history was deleted, and floor 0 could repeat IDs.
			if err := s.checkTree(ctx); err != nil {
				return reserveFailed, err
			}
			return reserveUnusable, u
		}
		R, resumed := s.floorOf(l.slot, rec)
		l.floor, l.resumed, l.czxid = R, resumed, rec.Czxid
		l.history, l.startMs = rec.History, c.nowMs()
		if resumed {
			l.history = l.history.Ended(s.resume.name, R)
		}
		switch waited, far := s.waitPast(ctx, l, R); waited {
		case reservationTooFar:
			return reserveUnusable, far
		case reservationStands:
			s.deleteLease(ctx, l)
			return reserveGaveUp, nil
		}
		now := c.nowMs()
		target := c.reservedUntil(now, R)
		attempted = true
		sent := time.Now()
		sendMs := c.nowMs()
		st, res, err := s.writeSlot(ctx, l, tree.SlotRecord{ReservedUntilMs: target, UpdatedMs: now}, version)
		switch res {
		case writeOK:
			c.observeWrite(st, sendMs, c.nowMs(), sent)
			l.version, l.ceiling = st.Version, target
			return reserved, nil
		case writeLeaseGone:
			return reserveGaveUp, nil
		case writeFailed:
			if errors.Is(err, zk.ErrNoAuth) {
				return reserveUnusable, refusedSlot(l.slot, err)
			}
			if fatal(err) {
				return reserveFailed, err
			}
			c.log.Warn("cannot write slot reservation", "slot", l.slot, "error", err)
			sleep(ctx, 200*time.Millisecond)
			attempted = false
		case writeServerError:
			// An unknown outcome (fence.go): the next read adopts the
			// write if it landed, else it is made again.
			c.log.Warn("zookeeper answered the slot reservation with an error; trying again", "slot", l.slot, "error", err)
			sleep(ctx, 200*time.Millisecond)
		}
	}
}

// pastReservation is how waitPast's wait for the clock to pass a slot's
// stored reservation ended.
type pastReservation int

const (
	// reservationPassed: the clock is past it: the claim may write.
	reservationPassed pastReservation = iota + 1
	// reservationTooFar: it is further ahead than MaxReservationWait (a
	// clock behind, or a horizon longer than the wait): the slot is to be
	// avoided for that long (the *slotUnusable).
	reservationTooFar
	// reservationStands: the wait ended with the clock not past it (the
	// clock moved back while we waited, or ctx ended): the lease is given
	// up.
	reservationStands
)

// waitPast waits until the clock is past R, the stored reservation.
func (s *leaseLoop) waitPast(ctx context.Context, l *wonLease, R int64) (pastReservation, *slotUnusable) {
	c := s.c
	gap := time.Duration(R-c.nowMs()) * time.Millisecond
	if gap < 0 {
		return reservationPassed, nil
	}
	if gap > c.cfg.MaxReservationWait {
		// Not for the whole gap: the clock may be put right meanwhile.
		return reservationTooFar, s.farFound(l.slot, R)
	}
	c.log.Info("waiting for the slot's reservation to pass", "slot", l.slot, "reserved_until", time.UnixMilli(R).UTC(), "wait", gap)
	c.setWaiting(ReasonReserved, R)
	defer c.setWaiting(ReasonNoLease, 0)
	deadline := time.Now().Add(c.cfg.MaxReservationWait + time.Second)
	for {
		now := c.nowMs()
		if now > R {
			return reservationPassed, nil
		}
		if time.Now().After(deadline) {
			return reservationStands, nil // the clock moved back while we waited
		}
		if !sleep(ctx, min(time.Duration(R-now+1)*time.Millisecond, 100*time.Millisecond)) {
			return reservationStands, nil
		}
	}
}

// farFound reports slot sl reserved until R, too far past our clock to
// wait for: the first of a situation at Info, with the reservation (after
// init or recover every slot is far, so the rest go to Debug), and the
// readiness verdict says reserved_until. Avoided for the gap at most.
func (s *leaseLoop) farFound(sl snowflake.Slot, R int64) *slotUnusable {
	c := s.c
	gap := time.Duration(R-c.nowMs()) * time.Millisecond
	s.far++
	if s.far == 1 {
		c.log.Info("free slots are reserved past our clock (after snowflakectl init or recover, for the fleet's bound); trying others, then waiting for the earliest",
			"first", sl, "reserved_until", time.UnixMilli(R).UTC(), "serving_in", gap.Round(time.Second), "max_reservation_wait", c.cfg.MaxReservationWait)
	} else {
		c.log.Debug("slot is reserved too far past our clock; trying another",
			"slot", sl, "reserved_until", time.UnixMilli(R).UTC(), "wait", gap, "max_wait", c.cfg.MaxReservationWait)
	}
	if r, until := c.waitingFor(); r != ReasonReserved || R < until {
		c.setWaiting(ReasonReserved, R)
	}
	return farSlot(sl, min(gap, max(c.cfg.MaxReservationWait, time.Second)), R)
}

// reservedFar reads slot sl's node before a lease node is made for it,
// once slots were found reserved too far (s.far): after init or recover
// every slot is, and a claim of each (create, list, read, delete) cost
// ZooKeeper four requests a slot where this read costs one. A slot found
// far is avoided (true); anything else is left to the claim, which reads
// the slot again once its lease node is the lowest.
func (s *leaseLoop) reservedFar(ctx context.Context, sl snowflake.Slot) bool {
	var data []byte
	err := s.call(ctx, 0, func() (err error) { data, _, err = s.conn.Get(zklayout.SlotPath(s.c.cfg.Root, sl)); return })
	if err != nil {
		if !errors.Is(err, zk.ErrNoNode) {
			s.c.log.Debug("cannot read the slot node before claiming it", "slot", sl, "error", err)
		}
		return false
	}
	rec, err := tree.DecodeSlot(data)
	if err != nil || time.Duration(rec.ReservedUntilMs-s.c.nowMs())*time.Millisecond <= s.c.cfg.MaxReservationWait {
		return false
	}
	if _, beyond := s.beyond(rec.ReservedUntilMs); beyond {
		return false // damage, not a wait: the claim's read says so
	}
	s.avoidSlot(s.farFound(sl, rec.ReservedUntilMs))
	return true
}
