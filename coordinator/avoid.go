package coordinator

import (
	"errors"
	"fmt"
	"time"

	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/snowflake"
)

// slotAvoid is how long a slot found unusable (its node refused us, does
// not decode, or is missing) is left alone before it is looked at again:
// long enough not to hammer it, short enough to notice a fixed ACL or a
// repair.
const slotAvoid = time.Minute

// unusable is why a slot cannot be served.
type unusable int

const (
	// slotRefused: ZooKeeper refuses our read or write of the slot node (an
	// ACL changed, say), or the world may write it: no worker with our
	// credentials can serve it until an operator puts the ACL right.
	slotRefused unusable = iota + 1
	// slotUndecodable: the slot node holds no slot record (errBadSlotNode):
	// its reservation is unknown, so nobody may serve the slot until an
	// operator repairs it.
	slotUndecodable
	// slotMissing: the slot node is missing (damage): its history is lost,
	// and a holder starting at floor 0 could repeat IDs.
	slotMissing
	// slotFar: the slot is reserved further past our clock than
	// MaxReservationWait (waitPast); avoided for the gap at most, as the
	// clock may be put right meanwhile.
	slotFar
)

// slotUnusable is a step's report (readSlot, waitPast, reserve, renew)
// that a slot cannot be served: why, and for how long to leave it alone.
// The steps only report; the claiming and serving states alone act on it
// (avoidSlot).
type slotUnusable struct {
	slot  snowflake.Slot
	why   unusable
	avoid time.Duration
	err   error // the cause
	// reservedUntil is a far slot's stored reservation (Unix ms).
	reservedUntil int64
}

func (u *slotUnusable) Error() string { return fmt.Sprintf("slot %s unusable: %v", u.slot, u.err) }

func (u *slotUnusable) Unwrap() error { return u.err }

// unusableSlot is err's report that a slot is unusable, if it is one.
func unusableSlot(err error) (*slotUnusable, bool) {
	var u *slotUnusable
	ok := errors.As(err, &u)
	return u, ok
}

func refusedSlot(sl snowflake.Slot, err error) *slotUnusable {
	return &slotUnusable{slot: sl, why: slotRefused, avoid: slotAvoid, err: err}
}

func undecodableSlot(sl snowflake.Slot, err error) *slotUnusable {
	return &slotUnusable{slot: sl, why: slotUndecodable, avoid: slotAvoid, err: err}
}

func missingSlot(root string, sl snowflake.Slot) *slotUnusable {
	return &slotUnusable{slot: sl, why: slotMissing, avoid: slotAvoid,
		err: &damage{kind: "slot", path: zklayout.SlotPath(root, sl)}}
}

func farSlot(sl snowflake.Slot, avoid time.Duration, reservedUntil int64) *slotUnusable {
	return &slotUnusable{slot: sl, why: slotFar, avoid: avoid, err: errors.New("reserved too far past our clock"), reservedUntil: reservedUntil}
}

// avoided is a slot left alone until a time, and why.
type avoided struct {
	until time.Time
	why   *slotUnusable
}

// avoidSlot leaves u's slot alone for u.avoid, and says why where an
// operator must act: a refused or undecodable slot node at error (an
// undecodable one counted for an alert), a missing one as damage
// (treeMissing). A far reservation is said once a situation where it is
// found (farFound), and summed up when nothing is left to claim
// (sayWhyWaiting).
func (s *leaseLoop) avoidSlot(u *slotUnusable) {
	c := s.c
	switch u.why {
	case slotRefused:
		c.log.Error("zookeeper refuses our access to the slot node; avoiding the slot",
			"slot", u.slot, "path", zklayout.SlotPath(c.cfg.Root, u.slot), "for", u.avoid, "error", u.err)
	case slotUndecodable:
		c.m.undecodable.Inc()
		c.log.Error("slot node does not decode; avoiding the slot until it is repaired",
			"slot", u.slot, "path", zklayout.SlotPath(c.cfg.Root, u.slot), "for", u.avoid, "error", u.err)
	}
	if s.avoid == nil {
		s.avoid = map[snowflake.Slot]avoided{}
	}
	s.avoid[u.slot] = avoided{until: time.Now().Add(u.avoid), why: u}
	if u.why == slotMissing {
		c.treeMissing(u.err)
	}
}

// ErrSlotsRefused: ZooKeeper refuses our writes to every slot this worker
// may claim (their ACLs were changed, say), so claiming again cannot help.
var ErrSlotsRefused = errors.New("zookeeper refuses our writes to every slot this worker may claim")

// allRefused is an ErrSlotsRefused error when every candidate slot is
// avoided for refusing us: standing by for one to free cannot help.
func (s *leaseLoop) allRefused() error {
	refused := 0
	for _, a := range s.avoid {
		if a.why.why == slotRefused {
			refused++
		}
	}
	if refused == 0 {
		return nil
	}
	now := time.Now()
	var last error
	for _, sl := range s.candidates() {
		a, ok := s.avoid[sl]
		if !ok || a.why.why != slotRefused || !now.Before(a.until) {
			return nil
		}
		last = a.why.err
	}
	return fmt.Errorf("%w (%d slots; last: %w)", ErrSlotsRefused, refused, last)
}
