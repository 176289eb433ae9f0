package client

import (
	"context"
	"sync/atomic"
	"time"
)

// endpoint is one worker: a bounded pool of connections and its health.
type endpoint struct {
	addr string
	// slots holds PoolSize entries: an idle connection, or nil for the right
	// to dial one. Taking an entry is how a call gets the worker; the pool
	// size is thereby also the bound on calls in flight to it.
	slots    chan *Conn
	inflight atomic.Int64 // calls holding or waiting for a slot
	// downUntil is the Unix ns before which the worker is left out;
	// fails counts consecutive failures for the doubling backoff.
	downUntil atomic.Int64
	fails     atomic.Int32
	closed    atomic.Bool
}

func newEndpoint(addr string, pool int) *endpoint {
	e := &endpoint{addr: addr, slots: make(chan *Conn, pool)}
	for range pool {
		e.slots <- nil
	}
	return e
}

// healthy reports the worker not in backoff at now (Unix ns).
func (e *endpoint) healthy(now int64) bool { return e.downUntil.Load() <= now }

// acquire takes a connection, dialing one if the slot is empty or its
// connection was last used before idleSince. It waits while all PoolSize
// are in use.
func (e *endpoint) acquire(ctx context.Context, dialTimeout time.Duration, idleSince time.Time) (*Conn, error) {
	var c *Conn
	select {
	case c = <-e.slots:
	default:
		select {
		case c = <-e.slots:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if e.closed.Load() {
		e.release(c)
		return nil, ErrClosed
	}
	if c != nil && c.used.Before(idleSince) {
		// The worker may have closed it by now; a fresh one costs a dial,
		// a dead one a failed request and a backoff.
		_ = c.Close()
		c = nil
	}
	if c != nil {
		return c, nil
	}
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	c, err := Dial(dctx, e.addr)
	cancel()
	if err != nil {
		e.slots <- nil
		return nil, err
	}
	return c, nil
}

// release gives a connection back; a broken one is closed and its slot
// freed for a new dial.
func (e *endpoint) release(c *Conn) {
	if c != nil && c.Broken() {
		_ = c.Close()
		c = nil
	}
	e.slots <- c
	// Close drains the slots once; a connection given back after that
	// drain is closed here instead.
	if e.closed.Load() {
		e.drain()
	}
}

// drain closes the idle connections, leaving their slots free.
func (e *endpoint) drain() {
	n := len(e.slots)
	var keep int
	for range n {
		select {
		case c := <-e.slots:
			if c != nil {
				_ = c.Close()
			}
			keep++
		default:
		}
	}
	for range keep {
		e.slots <- nil
	}
}

// failed puts the worker in backoff, doubling with consecutive failures;
// it returns the backoff and whether this failure began a streak.
func (e *endpoint) failed(now int64, base, max time.Duration) (time.Duration, bool) {
	n := e.fails.Add(1)
	d := base
	for i := int32(1); i < n && d < max; i++ {
		d *= 2
	}
	d = min(d, max)
	e.downUntil.Store(now + int64(d))
	return d, n == 1
}

// succeeded ends a failure streak and reports whether there was one; the
// loads keep the common case free of writes to a shared cache line.
func (e *endpoint) succeeded() bool {
	if e.fails.Load() == 0 {
		return false
	}
	e.downUntil.Store(0)
	return e.fails.Swap(0) != 0
}

// close marks the endpoint gone and closes its idle connections; calls in
// flight finish and their connections are closed on release.
func (e *endpoint) close() {
	e.closed.Store(true)
	e.drain()
}
