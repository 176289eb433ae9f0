package worker

import (
	"errors"
	"fmt"

	"github.com/snowfleet/snowfleet/coordinator"
	"github.com/snowfleet/snowfleet/snowflake"
	"github.com/snowfleet/snowfleet/worker/resp"
)

// IDSource is where the server takes IDs from, and the verdict on whether it
// may issue them: the worker's slot lease, a *coordinator.Coordinator.
type IDSource interface {
	// Generator is the current lease's generator, nil while none is held;
	// it is loaded per request, since every claim makes a new one.
	Generator() *snowflake.Generator
	// Ready is Readiness().Ready(), cheap enough to check on every read.
	Ready() bool
	// Readiness is the verdict on whether IDs may be issued now, and why
	// not: the refusals below, /readyz and INFO format it.
	Readiness() coordinator.Readiness
	// Status is a snapshot for INFO and /status.
	Status() coordinator.Status
}

// refuse answers, as -NOLEASE or -CLOCKBACK, why the lease may not issue
// IDs now. It is off the hot path.
func (c *conn) refuse(r coordinator.Readiness) result {
	switch r.Reason {
	case coordinator.ReasonCeiling:
		return c.leaseReply(resNoLease, ceilingPassed(r.NowMs-r.CeilingMs))
	case coordinator.ReasonClockBack:
		return c.leaseReply(resClockBack, clockBehind(r.LastIssuedMs-r.NowMs))
	case coordinator.ReasonSkew:
		if r.State == coordinator.StateServing || r.State == coordinator.StateDisconnected {
			return c.leaseReply(resNoLease, fmt.Sprintf(
				"this worker's lease %s is not ready: its clock is %dms off ZooKeeper's (state %s); try another worker", r.Slot, r.SkewMs, r.State))
		}
		return c.leaseReply(resNoLease, fmt.Sprintf("this worker's lease is not ready (state %s); try another worker", r.State))
	}
	if r.Reason != coordinator.ReasonNoLease && r.Reason.Leaseless() {
		// What it waits for, as /readyz words it: "awaiting_recover (state
		// claiming)", "reserved_until <time> (state standby)".
		return c.leaseReply(resNoLease, fmt.Sprintf("this worker holds no lease: %s; try another worker", r))
	}
	return c.leaseReply(resNoLease, fmt.Sprintf("this worker holds no lease (state %s); try another worker", r.State))
}

// idError maps a generator error to its reply.
func (c *conn) idError(err error) result {
	var rb *snowflake.RollbackError
	var ce *snowflake.CeilingError
	switch {
	case errors.As(err, &rb):
		return c.leaseReply(resClockBack, clockBehind(rb.Behind.Milliseconds()))
	case errors.Is(err, snowflake.ErrClockRollback):
		return c.leaseReply(resClockBack, err.Error()+"; try another worker")
	case errors.As(err, &ce):
		return c.leaseReply(resNoLease, ceilingPassed(ce.NowMs-ce.CeilingMs))
	case errors.Is(err, snowflake.ErrSealed):
		return c.leaseReply(resNoLease, "this worker's lease was released or lost; try another worker")
	case errors.Is(err, snowflake.ErrNoLease):
		return c.leaseReply(resNoLease, err.Error()+"; try another worker")
	}
	c.wbuf = resp.AppendCodeError(c.wbuf, resp.CodeErr, err.Error())
	return resError
}

// ceilingPassed and clockBehind are the sentences for the two refusals that
// both the Ready check and the generator can report.
func ceilingPassed(agoMs int64) string {
	return fmt.Sprintf("this worker's lease ceiling passed %dms ago and ZooKeeper has not confirmed a new one; try another worker", agoMs)
}

func clockBehind(ms int64) string {
	return fmt.Sprintf("the clock is %dms behind the last issued ID; this worker issues none until it catches up; try another worker", ms)
}

// leaseReply answers a refusal; with CloseOnNoLease the connection closes
// after it, so that a generic pooled client's reconnect lands, through its
// balancer, on a worker that serves.
func (c *conn) leaseReply(r result, msg string) result {
	c.refused = c.s.cfg.CloseOnNoLease
	code := resp.CodeNoLease
	if r == resClockBack {
		code = resp.CodeClockBack
	}
	c.wbuf = resp.AppendCodeError(c.wbuf, code, msg)
	return r
}
