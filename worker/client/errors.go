package client

import (
	"errors"
	"fmt"

	"github.com/snowfleet/snowfleet/snowflake"
	"github.com/snowfleet/snowfleet/worker/resp"
)

var (
	// ErrNoWorkers: no worker gave IDs before the deadline, because none was
	// known, or every one tried failed; the error also wraps the last
	// failure and the context's error.
	ErrNoWorkers = errors.New("no worker available")
	// ErrClosed: the Client was closed, and only that; a worker dropped
	// from the list while a call waited on it is not reported with it.
	ErrClosed = errors.New("client is closed")
	// ErrBadCount: NextN was asked for a count outside 1..MaxBatch.
	ErrBadCount = errors.New("count out of range")
)

// Reply codes a worker puts first in an error reply (defined in
// worker/resp, which the worker answers with).
const (
	// CodeNoLease: the worker holds no lease (claiming, standby, past its
	// ceiling, sealed, clock skew): another worker can serve.
	CodeNoLease = resp.CodeNoLease
	// CodeClockBack: the worker's clock is behind its last issued timestamp.
	CodeClockBack = resp.CodeClockBack
	// CodeErr: the request was wrong; retrying elsewhere will not help.
	CodeErr = resp.CodeErr
)

// OrderError: a worker returned an ID not above one it had returned
// before the request began: it repeats IDs (a worker of a fleet
// restored from a backup without recover, one whose clock went back past
// its guard, or a server that is not a snowfleet worker). The IDs of the
// reply are dropped, the worker is backed off and the call goes on
// elsewhere; snowflake_client_order_errors_total counts it.
type OrderError struct {
	// Addr is the worker that answered.
	Addr string
	// Previous is the highest ID the worker had returned, ID the one not
	// above it.
	Previous, ID int64
}

func (e *OrderError) Error() string {
	return fmt.Sprintf("worker %s: ID %d is not above %d, which it returned before: it repeats IDs", e.Addr, e.ID, e.Previous)
}

// SlotError: a worker returned an ID of another slot than the one its lease
// node, by which the client found it, names: a stale listing (the worker
// claimed another slot since) or a worker that is not what the lease node
// says (a forged lease node pointing at a rogue server). The IDs of the
// reply are dropped, the worker is backed off, and the call goes on
// elsewhere; snowflake_client_slot_mismatches_total counts it.
type SlotError struct {
	// Addr is the worker that answered.
	Addr string
	// Want is the slot of its lease node, Got the slot of the ID, ID the ID.
	Want, Got snowflake.Slot
	ID        int64
}

func (e *SlotError) Error() string {
	return fmt.Sprintf("worker %s: ID %d is of slot %s, but its lease node names %s", e.Addr, e.ID, e.Got, e.Want)
}

// ReplyError is an error reply of a worker, e.g. "-NOLEASE no lease held".
type ReplyError struct {
	// Addr is the worker that answered.
	Addr string
	// Code is the reply's first word: CodeNoLease, CodeClockBack, CodeErr or
	// whatever else the peer sent.
	Code string
	// Message is the rest of the reply.
	Message string
}

func (e *ReplyError) Error() string {
	if e.Addr == "" {
		return e.Code + " " + e.Message
	}
	return fmt.Sprintf("worker %s: %s %s", e.Addr, e.Code, e.Message)
}

// Retryable reports whether another worker may serve what this one refused.
func (e *ReplyError) Retryable() bool { return e.Code == CodeNoLease || e.Code == CodeClockBack }

// ProtocolError is a reply that breaks the protocol or its promises (not
// RESP, the wrong type, the wrong count, IDs not positive or not
// ascending). The connection it came on is closed.
type ProtocolError struct {
	// Addr is the worker that sent it.
	Addr string
	// Problem says what was wrong.
	Problem string
}

func (e *ProtocolError) Error() string {
	return fmt.Sprintf("worker %s: bad reply: %s", e.Addr, e.Problem)
}
