package snowflake

import (
	"errors"
	"fmt"
	"time"
)

var (
	// ErrNoLease is matched (errors.Is) by every error that means this
	// generator may not issue IDs now because of its lease: ErrPastCeiling and
	// ErrSealed. It is here, not in coordinator where leases are, because
	// the generator's own errors match it (leaseError.Is) and coordinator
	// imports this package; the worker answers it with -NOLEASE.
	ErrNoLease = errors.New("no lease")
	// ErrPastCeiling: the clock is past the highest timestamp the lease
	// confirmed; the generator fails fast until the ceiling is raised.
	ErrPastCeiling = &leaseError{"clock is past the lease ceiling"}
	// ErrSealed: the generator was sealed (lease released or lost); it never
	// issues again.
	ErrSealed = &leaseError{"generator is sealed: the lease was released or lost"}
	// ErrClockRollback: the clock is behind the last issued timestamp by more
	// than the configured wait. The error returned wraps it with the gap.
	ErrClockRollback = errors.New("clock rollback")
)

type leaseError struct{ msg string }

func (e *leaseError) Error() string        { return e.msg }
func (e *leaseError) Is(target error) bool { return target == ErrNoLease }

// RollbackError says how far the clock is behind the last issued timestamp.
// With a logical clock (Logical) it also says which bound stopped it:
// MaxLead, or the ceiling (CeilingMs, Unix ms).
type RollbackError struct {
	Behind    time.Duration
	MaxLead   time.Duration
	CeilingMs int64
}

func (e *RollbackError) Error() string {
	msg := fmt.Sprintf("clock rollback: clock is %v behind the last issued timestamp", e.Behind)
	switch {
	case e.MaxLead > 0:
		msg += fmt.Sprintf(", and the logical clock may lead it by %v at most", e.MaxLead)
	case e.CeilingMs > 0:
		msg += fmt.Sprintf(", and the logical clock reached the lease ceiling %d", e.CeilingMs)
	}
	return msg
}

// Unwrap makes errors.Is(err, ErrClockRollback) true.
func (e *RollbackError) Unwrap() error { return ErrClockRollback }

// CeilingError says how far the clock is past the ceiling.
type CeilingError struct {
	NowMs, CeilingMs int64
}

func (e *CeilingError) Error() string {
	return fmt.Sprintf("%s: clock %d ms is %d ms past ceiling %d ms", ErrPastCeiling.Error(), e.NowMs, e.NowMs-e.CeilingMs, e.CeilingMs)
}

// Unwrap makes errors.Is(err, ErrPastCeiling) and errors.Is(err, ErrNoLease) true.
func (e *CeilingError) Unwrap() error { return ErrPastCeiling }
