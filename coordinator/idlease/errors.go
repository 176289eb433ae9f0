package idlease

import (
	"errors"
	"fmt"

	"github.com/snowfleet/snowfleet/coordinator"
)

var (
	// ErrClosed: Close was called; the lease issues nothing more.
	ErrClosed = errors.New("idlease: lease closed")
	// ErrNotReady is matched (errors.Is) by a *NotReadyError: the caller's
	// context ended before a confirmed lease could issue.
	ErrNotReady = errors.New("idlease: no confirmed lease")
	// ErrStopped: the lease stopped for a fault that retrying cannot fix (a
	// root made for another layout, failed auth, a datacenter the root does
	// not own); the error wraps the coordinator's.
	ErrStopped = errors.New("idlease: lease stopped")
)

// NotReadyError says why no ID was issued before the caller's context
// ended: the lease's verdict at that moment and the context's error. It
// matches ErrNotReady and the context's error (context.DeadlineExceeded,
// context.Canceled or a cause).
type NotReadyError struct {
	// Readiness is the lease's verdict when the wait ended: its Reason
	// (no_lease while claiming, root_missing before init, awaiting_recover,
	// reserved_until after init or recover, ceiling_passed while ZooKeeper
	// is away, clock_back, skew), its State and Slot.
	Readiness coordinator.Readiness
	// Last is the generator's last refusal, nil if none was asked.
	Last error
	// Ctx is the context's error (context.Cause).
	Ctx error
}

func (e *NotReadyError) Error() string {
	r := e.Readiness
	msg := fmt.Sprintf("idlease: no confirmed lease before the context ended (%s, state %s", r.Why(), r.State)
	if r.Slot != "" {
		msg += ", slot " + r.Slot
	}
	msg += ")"
	if e.Last != nil {
		msg += ": " + e.Last.Error()
	}
	return msg + ": " + e.Ctx.Error()
}

// Unwrap makes errors.Is match ErrNotReady and the context's error.
func (e *NotReadyError) Unwrap() []error { return []error{ErrNotReady, e.Ctx} }
