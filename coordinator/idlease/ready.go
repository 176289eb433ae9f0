package idlease

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/snowfleet/snowfleet/coordinator"
)

// Ready reports whether Next would issue now without waiting: a confirmed
// lease, the clock within its ceiling, not behind, and within MaxSkew of
// ZooKeeper's. It is exported as snowflake_coordinator_ready too.
func (l *Lease) Ready() bool { return l.c.Ready() }

// Readiness is the verdict with its reason, state and slot.
func (l *Lease) Readiness() coordinator.Readiness { return l.c.Readiness() }

// WaitReady returns nil once the lease is ready, a *NotReadyError when ctx
// ends first, ErrClosed after Close, the ErrStopped error on a fault.
func (l *Lease) WaitReady(ctx context.Context) error {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		if l.closed.Load() {
			return ErrClosed
		}
		if l.c.Ready() {
			return nil
		}
		select {
		case <-l.done:
			if l.runErr != nil {
				return l.runErr
			}
			return ErrClosed
		case <-ctx.Done():
			return &NotReadyError{Readiness: l.c.Readiness(), Ctx: context.Cause(ctx)}
		case <-t.C:
		}
	}
}

// ReadyHandler answers one line, its first word the reason, as a worker's
// /readyz does: 200 "ready (slot …)" while the lease is ready, else 503
// with no_lease, ceiling_passed, clock_back or skew, then the figures: for
// a readiness probe of a program that must not take work without IDs.
func (l *Lease) ReadyHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		r := l.c.Readiness()
		if !r.Ready() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		fmt.Fprintln(w, r)
	})
}
