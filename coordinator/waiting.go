package coordinator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/snowflake"
)

// sayWhyWaiting logs why the claim loop takes no slot, and records it for
// the readiness verdict (setWaiting), once for each
// situation rather than once a slot or a listing: every slot it may take
// is held (it stands by), or the free ones are avoided: reserved too far
// past its clock (after init or recover, every slot is, until the
// reservation nears), refused, or damaged. After init, a worker used to
// write one line per slot tried (1,000 to 1,700 a start).
func (s *claimer) sayWhyWaiting(allHeld bool) {
	c := s.c
	if allHeld {
		c.setWaiting(ReasonNoLease, 0)
		if s.waiting != "held" {
			s.waiting = "held"
			c.log.Info("every slot is held; standing by", "datacenter", c.cfg.Datacenter)
		}
		return
	}
	var (
		far, refused, damaged int
		earliest              int64
	)
	now := time.Now()
	for _, a := range s.avoid {
		if !now.Before(a.until) {
			continue
		}
		switch a.why.why {
		case slotFar:
			far++
			if earliest == 0 || a.why.reservedUntil < earliest {
				earliest = a.why.reservedUntil
			}
		case slotRefused:
			refused++
		default:
			damaged++
		}
	}
	if far+refused+damaged == 0 {
		return // the avoidances just ran out: the next listing claims
	}
	if far > 0 {
		c.setWaiting(ReasonReserved, earliest)
	} else {
		c.setWaiting(ReasonNoLease, 0)
	}
	key := fmt.Sprintf("avoided %d %d %d %d", far, refused, damaged, earliest)
	if key == s.waiting {
		return
	}
	s.waiting = key
	args := []any{"datacenter", c.cfg.Datacenter, "reserved_past_our_clock", far, "refused", refused, "damaged", damaged}
	if far > 0 {
		until := time.UnixMilli(earliest).UTC()
		args = append(args, "earliest_reservation", until, "serving_in", time.Until(until).Round(time.Second),
			"max_reservation_wait", c.cfg.MaxReservationWait)
		c.log.Info("no free slot can be claimed yet: the free slots are reserved past our clock (after snowflakectl init or recover, until the fleet's bound passes); waiting", args...)
		return
	}
	c.log.Warn("no free slot can be claimed: the free slots are refused or damaged; waiting", args...)
}

// setWaiting records what a Coordinator without a lease waits for, for its
// readiness verdict (Reason, and the reservation for ReasonReserved).
func (c *Coordinator) setWaiting(r Reason, reservedUntilMs int64) {
	c.waitReserved.Store(reservedUntilMs)
	c.waitReason.Store(uint32(r))
}

// awaitingRecover reports that the ensemble went back in time and the
// coordinator waits for snowflakectl recover (rollback.go).
func (c *Coordinator) awaitingRecover() bool {
	r, _ := c.waitingFor()
	return r == ReasonAwaitingRecover
}

// waitingFor is what setWaiting recorded.
func (c *Coordinator) waitingFor() (Reason, int64) {
	r := Reason(c.waitReason.Load())
	if r == ReasonNone {
		r = ReasonNoLease
	}
	return r, c.waitReserved.Load()
}

// farFound reports slot sl reserved until R, too far past our clock to
// wait for: the first of a situation at Info, with the reservation (after
// init or recover every slot is far, so the rest go to Debug), and the
// readiness verdict says reserved_until. Avoided for the gap at most.
func (s *claimer) farFound(sl snowflake.Slot, R int64) *slotUnusable {
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
func (s *claimer) reservedFar(ctx context.Context, sl snowflake.Slot) bool {
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

// answered notes that ZooKeeper answered a call while no lease is held (a
// root missing, a recover awaited): the coordinator is no longer
// "disconnected" from a session it lost, but connecting, its readiness
// saying what it waits for.
func (c *Coordinator) answered() {
	if c.getState() == StateDisconnected {
		c.setState(StateConnecting)
	}
}
