package client

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-zookeeper/zk"
	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
)

// Client hands out IDs from a fleet of workers. It is safe for concurrent
// use; make one per process and Close it when done.
type Client struct {
	cfg Config
	log hclog.Logger
	m   *metrics

	eps atomic.Pointer[[]*endpoint] // the current workers, sorted by addr

	mu      sync.Mutex
	changed chan struct{} // closed and replaced when eps changes
	closed  bool
	shut    chan struct{} // closed when Close has finished

	zk     *zk.Conn
	cancel context.CancelFunc
	done   chan struct{} // discovery has returned

	pf atomic.Pointer[prefetch] // nil unless Config.Prefetch
}

// New returns a Client for cfg. With Servers it opens a ZooKeeper session
// and follows the lease nodes under Root; calls made before the first list
// arrives wait for it (within their deadline). log and reg may be nil.
func New(cfg Config, log hclog.Logger, reg prometheus.Registerer) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = hclog.NewNullLogger()
	}
	var conn *zk.Conn
	if len(cfg.Static) == 0 {
		// Dialled before the metrics are registered, so that a failed New
		// leaves nothing in reg and can be retried.
		var err error
		if conn, err = dialZK(cfg, log); err != nil {
			return nil, err
		}
	}
	c := &Client{cfg: cfg, log: log, changed: make(chan struct{}), shut: make(chan struct{}), done: make(chan struct{})}
	empty := []*endpoint{}
	c.eps.Store(&empty)
	m, err := newMetrics(reg, cfg.ConstLabels, c.prefetched, func() float64 { return float64(len(*c.eps.Load())) })
	if err != nil {
		if conn != nil {
			conn.Close()
		}
		return nil, err
	}
	c.m = m
	if conn == nil {
		c.setEndpoints(staticTargets(cfg.Static))
		close(c.done)
	} else {
		ctx, cancel := context.WithCancel(context.Background())
		c.zk, c.cancel = conn, cancel
		go c.discover(ctx)
	}
	if cfg.Prefetch > 0 {
		c.pf.Store(newPrefetch(c))
	}
	return c, nil
}

// prefetched is the prefetch buffer's fill, for its gauge.
func (c *Client) prefetched() float64 {
	if p := c.pf.Load(); p != nil {
		return p.buffered()
	}
	return 0
}

// Next returns one ID (a NEXTID). ctx's deadline bounds the whole call,
// retries included (CallTimeout when it has none); a cancel without a
// deadline is noticed between attempts, an attempt itself is bounded by
// RequestTimeout.
//
// With Config.Prefetch, Next hands out a buffered ID when one is there, and
// asks a worker itself only when the buffer is empty: for a whole run, as a
// refill would, keeping the rest (a single NEXTID would leave a worker's
// millisecond too short for the next run of 4,096).
func (c *Client) Next(ctx context.Context) (int64, error) {
	if p := c.pf.Load(); p != nil {
		if id, ok := p.next(); ok {
			return id, nil
		}
		return p.fetch(ctx)
	}
	var id int64
	err := c.call(ctx, func(conn *Conn) error {
		v, err := conn.Next()
		id = v
		return err
	})
	return id, err
}

// NextN returns n IDs, 1 <= n <= MaxBatch, consecutive and ascending, from
// one worker in one request: a NEXTRANGE n, or a NEXTIDS n where the worker
// has no NEXTRANGE.
func (c *Client) NextN(ctx context.Context, n int) ([]int64, error) {
	first, err := c.NextRange(ctx, n)
	if err != nil {
		return nil, err
	}
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = first + int64(i)
	}
	return ids, nil
}

// NextRange is NextN without the slice: the IDs first .. first+n-1 are the
// caller's, all of one millisecond of one worker. It allocates nothing
// (with a deadline on ctx) on a worker that has NEXTRANGE.
func (c *Client) NextRange(ctx context.Context, n int) (first int64, err error) {
	if n < 1 || n > MaxBatch {
		c.m.failures.Inc()
		return 0, fmt.Errorf("%w: n must be in 1..%d, got %d", ErrBadCount, MaxBatch, n)
	}
	err = c.call(ctx, func(conn *Conn) error {
		first, err = conn.run(n)
		return err
	})
	return first, err
}

// Endpoints lists the addresses of the workers the client knows, sorted.
func (c *Client) Endpoints() []string {
	eps := *c.eps.Load()
	out := make([]string, len(eps))
	for i, e := range eps {
		out[i] = e.addr
	}
	return out
}

// Close stops discovery, closes the ZooKeeper session and every idle
// connection; calls in flight finish and close theirs. Calls after Close
// fail with ErrClosed. It is safe to call twice; a second call returns when
// the first has finished.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		<-c.shut
		return nil
	}
	defer close(c.shut)
	c.closed = true
	c.mu.Unlock()
	if p := c.pf.Load(); p != nil {
		p.close()
	}
	if c.cancel != nil {
		c.cancel()
		// Closing the session first fails a discovery call that waits on an
		// unreachable ensemble (go-zookeeper has no call timeouts).
		c.zk.Close()
		<-c.done
	}
	c.mu.Lock()
	old := *c.eps.Load()
	empty := []*endpoint{}
	c.eps.Store(&empty)
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
	for _, e := range old {
		e.close()
	}
	return nil
}

// setEndpoints makes addrs the worker set, keeping the pools of workers
// that stay and closing those of workers that left.
// target is a worker to send requests to: its address and the slot index
// its lease node names (-1: a static address, any slot).
type target struct {
	addr string
	slot int32
}

// staticTargets are the addresses of a static list, any slot each.
func staticTargets(addrs []string) []target {
	ts := make([]target, len(addrs))
	for i, a := range addrs {
		ts[i] = target{addr: a, slot: -1}
	}
	return ts
}

func (c *Client) setEndpoints(ts []target) {
	ts = slices.Clone(ts)
	slices.SortFunc(ts, func(a, b target) int { return strings.Compare(a.addr, b.addr) })
	ts = slices.CompactFunc(ts, func(a, b target) bool { return a.addr == b.addr })
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	old := *c.eps.Load()
	byAddr := make(map[string]*endpoint, len(old))
	for _, e := range old {
		byAddr[e.addr] = e
	}
	next := make([]*endpoint, 0, len(ts))
	for _, t := range ts {
		if e, ok := byAddr[t.addr]; ok {
			e.slot.Store(t.slot) // the worker may hold another slot now
			next = append(next, e)
			delete(byAddr, t.addr)
			continue
		}
		next = append(next, newEndpoint(t.addr, t.slot, c.cfg.PoolSize))
	}
	c.eps.Store(&next)
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
	for _, e := range byAddr {
		e.close()
	}
	if len(byAddr) > 0 || len(next) != len(old) {
		addrs := make([]string, len(ts))
		for i, t := range ts {
			addrs[i] = t.addr
		}
		c.log.Info("workers changed", "workers", len(next), "addrs", addrs)
	}
}

// changedCh is closed at the next change of the worker set.
func (c *Client) changedCh() (<-chan struct{}, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed, c.closed
}

func (c *Client) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}
