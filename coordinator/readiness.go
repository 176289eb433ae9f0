package coordinator

import (
	"fmt"
	"time"

	"github.com/snowfleet/snowfleet/snowflake"
)

// Reason says why a lease may not issue IDs now.
type Reason uint8

const (
	// ReasonNone: ready, IDs may be issued.
	ReasonNone Reason = iota
	// ReasonNoLease: no lease is held, or its generator was sealed (the
	// lease was lost or released).
	ReasonNoLease
	// ReasonCeiling: the clock reached the confirmed ceiling and ZooKeeper
	// has not confirmed a higher one.
	ReasonCeiling
	// ReasonClockBack: the clock is behind the last issued timestamp by
	// more than MaxRollbackWait (Refuse), or by more than MaxClockLead, or
	// the logical clock reached the ceiling (Logical).
	ReasonClockBack
	// ReasonSkew: the clock is further than MaxSkew off the ZooKeeper
	// leader's.
	ReasonSkew
	// ReasonRootMissing: no lease, because the fleet's root is missing or
	// not finished: snowflakectl init makes it (a worker never does).
	ReasonRootMissing
	// ReasonAwaitingRecover: no lease, because the ensemble went back in
	// time (restored from a backup) and snowflakectl recover has not run.
	ReasonAwaitingRecover
	// ReasonReserved: no lease yet, because the free slots are reserved
	// past the clock (after init or recover, for the fleet's bound):
	// Readiness.ReservedUntilMs is the earliest.
	ReasonReserved
)

// Leaseless reports a reason that means no lease is held: no_lease, or
// what the lease waits for (root_missing, awaiting_recover,
// reserved_until). Such a verdict has no figures to show.
func (r Reason) Leaseless() bool {
	switch r {
	case ReasonNoLease, ReasonRootMissing, ReasonAwaitingRecover, ReasonReserved:
		return true
	}
	return false
}

func (r Reason) String() string {
	switch r {
	case ReasonNone:
		return "ready"
	case ReasonNoLease:
		return "no_lease"
	case ReasonCeiling:
		return "ceiling_passed"
	case ReasonClockBack:
		return "clock_back"
	case ReasonSkew:
		return "skew"
	case ReasonRootMissing:
		return "root_missing"
	case ReasonAwaitingRecover:
		return "awaiting_recover"
	case ReasonReserved:
		return "reserved_until"
	}
	return "unknown"
}

// Readiness is the one verdict on whether the lease may issue IDs now, and
// the figures it was reached from; the worker's refusals, /readyz, /status
// and INFO only format it.
type Readiness struct {
	// Reason is ReasonNone when ready, else the first condition that failed,
	// in the order of the constants; without a lease, ReasonNoLease or
	// what the lease waits for (root missing, recover, a reservation).
	Reason Reason
	// State and Slot are the coordinator's state and the slot held ("" if
	// none).
	State string
	Slot  string
	// NowMs is the clock the verdict was reached at (Unix ms).
	NowMs int64
	// CeilingMs and LastIssuedMs are the generator's (0 without one).
	CeilingMs    int64
	LastIssuedMs int64
	// SkewMs is the last measured skew against the ZooKeeper leader.
	SkewMs int64
	// MaxBehindMs is how far behind LastIssuedMs the clock may be while
	// ready: MaxRollbackWait with Refuse, MaxClockLead with Logical.
	MaxBehindMs int64
	// ReservedUntilMs is the reservation a ReasonReserved lease waits for.
	ReservedUntilMs int64
}

// Ready reports whether IDs may be issued.
func (r Readiness) Ready() bool { return r.Reason == ReasonNone }

// Why is the reason in words: its name, and for ReasonReserved the
// reservation awaited ("reserved_until 2026-12-06T11:30:41.5Z").
func (r Readiness) Why() string {
	if r.Reason == ReasonReserved {
		return r.Reason.String() + " " + time.UnixMilli(r.ReservedUntilMs).UTC().Format(time.RFC3339Nano)
	}
	return r.Reason.String()
}

// String is the verdict as a readiness probe shows it: the reason as its
// first word, so that a probe's log or a runbook can match on it, then the
// figures it was reached from ("no_lease (state claiming)", "root_missing
// (state connecting)", "awaiting_recover (state claiming)",
// "reserved_until 2026-12-06T11:30:41.5Z (state standby)", or "ready (slot
// dc07-m13, state serving, now_ms …, ceiling_ms …, last_issued_ms …,
// skew_ms …)").
func (r Readiness) String() string {
	if r.Reason.Leaseless() {
		return fmt.Sprintf("%s (state %s)", r.Why(), r.State)
	}
	return fmt.Sprintf("%s (slot %s, state %s, now_ms %d, ceiling_ms %d, last_issued_ms %d, skew_ms %d)",
		r.Reason, r.Slot, r.State, r.NowMs, r.CeilingMs, r.LastIssuedMs, r.SkewMs)
}

// Readiness is the verdict on the lease now, with the state and slot that
// explain it.
func (c *Coordinator) Readiness() Readiness {
	r := c.readiness()
	c.mu.Lock()
	r.State = c.state
	if c.lease != nil {
		r.Slot = c.lease.slot.String()
	}
	c.mu.Unlock()
	return r
}

// Ready is Readiness().Ready() without the state and slot, which take the
// lock: cheap enough for the worker to check on every read.
func (c *Coordinator) Ready() bool { return c.readiness().Ready() }

// SkewOK reports whether the last measured skew against the ZooKeeper
// leader is within MaxSkew: the one condition of Ready the generator does
// not enforce itself (it refuses past its ceiling, sealed, or with the
// clock behind). One atomic load, cheap enough to check on every ID, as an
// embedded lease does.
func (c *Coordinator) SkewOK() bool { return abs(c.skewMs.Load()) <= c.cfg.MaxSkew.Milliseconds() }

// readiness decides: a lease held (a generator, not sealed), the clock not
// past its ceiling, the clock not behind the last issued timestamp by
// more than the generator waits out, and the skew against ZooKeeper within
// MaxSkew.
func (c *Coordinator) readiness() Readiness {
	r := Readiness{NowMs: c.nowMs(), SkewMs: c.skewMs.Load(), MaxBehindMs: c.cfg.MaxRollbackWait.Milliseconds()}
	logical := c.cfg.OnClockBack == snowflake.Logical
	if logical {
		r.MaxBehindMs = c.cfg.clockLead().Milliseconds()
	}
	g := c.gen.Load()
	if g == nil {
		r.Reason, r.ReservedUntilMs = c.waitingFor()
		return r
	}
	r.CeilingMs, r.LastIssuedMs = g.Ceiling(), g.LastMs()
	switch {
	case g.Sealed():
		r.Reason = ReasonNoLease
	case r.NowMs > r.CeilingMs:
		// The generator issues up to and including its ceiling; so does
		// the verdict.
		r.Reason = ReasonCeiling
	case r.NowMs < r.LastIssuedMs-r.MaxBehindMs:
		r.Reason = ReasonClockBack
	case logical && r.NowMs < r.LastIssuedMs && r.LastIssuedMs >= r.CeilingMs:
		// Ahead of the clock and at the ceiling: the logical clock has
		// nowhere to go until the clock catches up or the ceiling rises.
		r.Reason = ReasonClockBack
	case abs(r.SkewMs) > c.cfg.MaxSkew.Milliseconds():
		r.Reason = ReasonSkew
	}
	return r
}
