package idlease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/snowfleet/snowfleet/snowflake"
)

// Next returns a new ID. On the hot path it is the lease generator's Next
// and one atomic check of the clock skew: nothing else. While no confirmed
// lease can issue (the lease is claimed again after a loss, ZooKeeper has
// not confirmed a ceiling the clock reached, the clock is behind with
// OnClockBack refuse, the clock is off ZooKeeper's by more than MaxSkew)
// it waits, up to ctx, for one that can, and never issues an ID outside a
// reservation ZooKeeper confirmed to the lease it came from. ctx bounds
// only the wait: a ready lease issues whatever ctx says.
//
// Errors: a *NotReadyError (matching ErrNotReady and ctx's error) when ctx
// ended first; ErrClosed after Close; ErrStopped on a fault.
func (l *Lease) Next(ctx context.Context) (int64, error) {
	if g := l.c.Generator(); g != nil && l.c.SkewOK() {
		if id, err := g.Next(); err == nil {
			return id, nil
		}
	}
	return l.wait(ctx, 1)
}

// NextN reserves n (1..snowflake.MaxBatch, 4,096) IDs with consecutive
// sequence numbers in one millisecond and returns the first: the IDs are
// first, first+1, ..., first+n-1. It waits as Next does.
func (l *Lease) NextN(ctx context.Context, n int) (first int64, err error) {
	if n < 1 || n > snowflake.MaxBatch {
		return 0, fmt.Errorf("idlease: next n: count %d is out of range 1..%d", n, snowflake.MaxBatch)
	}
	if g := l.c.Generator(); g != nil && l.c.SkewOK() {
		if id, err := g.NextN(n); err == nil {
			return id, nil
		}
	}
	return l.wait(ctx, n)
}

// Poll bounds of the wait for a lease: a re-claim takes from a few ms (a
// released slot) to the session timeout (a lost one), so the first looks
// are quick and later ones back off.
const (
	waitFirst = 100 * time.Microsecond
	waitMax   = 10 * time.Millisecond
)

// wait is the slow path: it asks whatever generator the coordinator holds
// now, until one issues, ctx ends, or the lease is closed or stopped. A
// generator asked is always the current lease's: each claim makes a new
// one, and the one of a lost or released lease is sealed first.
func (l *Lease) wait(ctx context.Context, n int) (int64, error) {
	start := time.Now()
	outcome := "issued"
	defer func() { l.m.wait.WithLabelValues(outcome).Observe(time.Since(start).Seconds()) }()
	var timer *time.Timer
	delay := waitFirst
	var last error
	for {
		if l.closed.Load() {
			outcome = "closed"
			return 0, ErrClosed
		}
		select {
		case <-l.done:
			outcome = "stopped"
			if l.runErr != nil {
				return 0, l.runErr
			}
			return 0, ErrClosed
		default:
		}
		if g := l.c.Generator(); g != nil {
			if !l.c.SkewOK() {
				last = errSkew
			} else if id, err := g.NextN(n); err == nil {
				return id, nil
			} else if !retryable(err) {
				outcome = "error"
				return 0, fmt.Errorf("idlease: %w", err)
			} else {
				last = err
			}
		}
		if ctx.Err() != nil {
			outcome = "not_ready"
			return 0, &NotReadyError{Readiness: l.c.Readiness(), Last: last, Ctx: context.Cause(ctx)}
		}
		if timer == nil {
			timer = time.NewTimer(delay)
			defer timer.Stop()
		} else {
			timer.Reset(delay)
		}
		select {
		case <-ctx.Done():
		case <-l.done:
		case <-timer.C:
		}
		delay = min(2*delay, waitMax)
	}
}

// errSkew is the refusal the wait records while the clock is too far off
// ZooKeeper's: the generator would issue, the lease's verdict says no.
var errSkew = errors.New("clock is off the ZooKeeper leader's by more than MaxSkew")

// retryable: a refusal a later lease, ceiling or clock can lift.
func retryable(err error) bool {
	return errors.Is(err, snowflake.ErrNoLease) || errors.Is(err, snowflake.ErrClockRollback)
}
