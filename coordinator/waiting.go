package coordinator

import (
	"fmt"
	"time"
)

// sayWhyWaiting logs why claiming takes no slot (standingBy), and records it for
// the readiness verdict (setWaiting), once for each
// situation rather than once a slot or a listing: every slot it may take
// is held (it stands by), or the free ones are avoided: reserved too far
// past its clock (after init or recover, every slot is, until the
// reservation nears), refused, or damaged. After init, a worker used to
// write one line per slot tried (1,000 to 1,700 a start).
func (s *leaseLoop) sayWhyWaiting(allHeld bool) {
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

// answered notes that ZooKeeper answered a call while no lease is held (a
// root missing, a recover awaited): the coordinator is no longer
// "disconnected" from a session it lost, but connecting, its readiness
// saying what it waits for.
func (c *Coordinator) answered() {
	if c.getState() == StateDisconnected {
		c.setState(StateConnecting)
	}
}
