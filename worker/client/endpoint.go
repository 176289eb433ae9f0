package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// Reasons acquire gives a call no connection that are no fault of the
// worker: the call moves on without a backoff, and without reporting them,
// which are not failures of the worker either.
var (
	// errGone: the worker was dropped from the list (discovery, or Close).
	// Never ErrClosed: that one means the Client is closed.
	errGone = errors.New("worker dropped from the list")
	// errDown: the worker went into backoff while the call waited for a
	// connection; the failure that put it there covers this call too.
	errDown = errors.New("worker in backoff")
)

// endpoint is one worker: a bounded pool of connections and its health.
type endpoint struct {
	addr string
	// slot is the slot index the worker's lease node names, which every ID
	// it returns must carry; -1 for a static address. Discovery updates it.
	slot atomic.Int32
	// slots holds PoolSize entries: an idle connection, or nil for the right
	// to dial one. Taking an entry is how a call gets the worker; the pool
	// size is thereby also the bound on calls in flight to it.
	slots    chan *Conn
	inflight atomic.Int64 // calls holding or waiting for a slot
	// downUntil is the Unix ns before which the worker is left out, read
	// by every pick without the lock.
	downUntil atomic.Int64
	// fails counts the backoffs of the current failure streak, for the
	// doubling; loaded without the lock on every success.
	fails atomic.Int32
	mu    sync.Mutex // orders the writes of failed and succeeded
	// failedAt is the Unix ns of the failure that began the current
	// backoff: requests started before it failed with it, or succeeded
	// before it, and say nothing new about the worker. Under mu.
	failedAt int64
	closed   atomic.Bool
	// high is the highest ID the worker returned on any connection: a
	// request begun after it was recorded must get IDs above it (Conn.last).
	high atomic.Int64
}

func newEndpoint(addr string, slot int32, pool int) *endpoint {
	e := &endpoint{addr: addr, slots: make(chan *Conn, pool)}
	e.slot.Store(slot)
	for range pool {
		e.slots <- nil
	}
	return e
}

// healthy reports the worker not in backoff at now (Unix ns).
func (e *endpoint) healthy(now int64) bool { return e.downUntil.Load() <= now }

// acquire takes a connection, dialing one if the slot is empty or its
// connection was unused for idle. It waits while all PoolSize are in use,
// and returns errDown if the worker went into backoff meanwhile. started
// is when the slot was taken and the worker found healthy: the request's
// start for its accounting (failed, succeeded).
func (e *endpoint) acquire(ctx context.Context, dialTimeout, idle time.Duration, opts DialOptions) (c *Conn, started int64, err error) {
	select {
	case c = <-e.slots:
	default:
		select {
		case c = <-e.slots:
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		}
	}
	now := time.Now()
	started = now.UnixNano()
	if e.closed.Load() {
		e.release(c)
		return nil, 0, fmt.Errorf("worker %s: %w", e.addr, errGone)
	}
	if !e.healthy(started) {
		e.release(c)
		return nil, 0, errDown
	}
	if c != nil && c.used.Before(now.Add(-idle)) {
		// The worker may have closed it by now; a fresh one costs a dial,
		// a dead one a failed request and a backoff.
		_ = c.Close()
		c = nil
	}
	if c != nil {
		c.wantSlot = e.slot.Load()
		return c, started, nil
	}
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	c, err = DialWith(dctx, e.addr, opts)
	cancel()
	if err != nil {
		e.slots <- nil
		return nil, started, err
	}
	c.wantSlot = e.slot.Load()
	return c, started, nil
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

// failed puts the worker in backoff after a request begun at started
// (Unix ns) failed at now; it returns the backoff and its place in the
// streak (1 begins one). A request begun before the failure that began the
// current backoff failed with it (a restart fails every request in flight
// at once): it returns 0 and changes nothing, so that one event is one
// backoff, not one per request. The backoff doubles with each counted
// failure up to max, and is drawn from its upper half at random so that
// clients that saw the same failure do not come back in step.
func (e *endpoint) failed(started, now int64, base, max time.Duration) (time.Duration, int32) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if started <= e.failedAt {
		return 0, 0
	}
	n := e.fails.Add(1)
	d := base
	for i := int32(1); i < n && d < max; i++ {
		d *= 2
	}
	d = min(d, max)
	d -= rand.N(d/2 + 1)
	e.failedAt = now
	e.downUntil.Store(now + int64(d))
	return d, n
}

// succeeded ends a failure streak after a request begun at started (Unix
// ns) succeeded, and reports whether there was one. A success of a request
// begun before the last failure (a reply sent before a -NOLEASE) ends
// nothing. The load keeps the common case free of locks and of writes to a
// shared cache line.
func (e *endpoint) succeeded(started int64) bool {
	if e.fails.Load() == 0 {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.fails.Load() == 0 || started <= e.failedAt {
		return false
	}
	e.fails.Store(0)
	e.downUntil.Store(0)
	return true
}

// close marks the endpoint gone and closes its idle connections; calls in
// flight finish and their connections are closed on release.
func (e *endpoint) close() {
	e.closed.Store(true)
	e.drain()
}

// raiseHigh records id as returned by the worker, if above what was.
func (e *endpoint) raiseHigh(id int64) {
	for {
		h := e.high.Load()
		if id <= h || e.high.CompareAndSwap(h, id) {
			return
		}
	}
}
