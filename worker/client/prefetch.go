package client

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/snowfleet/snowfleet/snowflake"
)

// prefetch is the opt-in buffer of IDs behind Next (Config.Prefetch):
// refillers fetch runs of Prefetch IDs (NEXTRANGE, or NEXTIDS from workers
// without it) in the background, from workers chosen as any call's, before
// the buffer runs dry, and Next hands out an ID from it without a round
// trip. IDs issued under a lease stay unique whatever becomes of the worker
// later, so a buffered run is good until it is stale (MaxStaleness), and is
// dropped then, never handed out.
//
// Next's common path is two atomic loads and one atomic add on the run in
// hand (cur), no lock and no clock read: staleness is judged against a
// coarse clock that the refillers and a ticker keep (clock), and every
// run's deadline is moved earlier by the most that clock may lag. The lock
// is taken once a run, to move to the next one.
type prefetch struct {
	c      *Client
	ctx    context.Context // ends at close, and with it a refill under way
	cancel context.CancelFunc
	stale  int64 // MaxStaleness, ns
	// tick is how often the ticker moves clock; lag (2 ticks) is how far
	// behind the monotonic clock it may be when Next reads it.
	tick, lag time.Duration
	clock     atomic.Int64 // a recent nanotime, never moved back
	cur       atomic.Pointer[idRun]
	// started counts the refillers running: two per known worker (so that
	// each worker has a request waiting at every millisecond), at least
	// minRefillers, at most maxRefillers.
	started atomic.Int32

	mu     sync.Mutex
	runs   []*idRun // fetched, not yet in hand, in the order they came
	queued int      // IDs in runs
	want   chan struct{}
	stop   chan struct{}
	wg     sync.WaitGroup
	closed bool
}

// idRun is one fetched run not yet handed out: next, next+1, ... end-1,
// consecutive IDs of one millisecond. next is taken with an atomic add by
// whoever calls Next, and may run past end (those values are no IDs). Its
// IDs are stale once the coarse clock reaches deadline. A run is never
// reused: a Next still holding it must not see another run's bounds.
type idRun struct {
	next     atomic.Int64
	end      int64
	deadline int64
}

// left is how many of r's IDs are not handed out yet.
func (r *idRun) left() int64 { return max(r.end-r.next.Load(), 0) }

const (
	minRefillers = 3
	maxRefillers = 64
	// minTick bounds how often the ticker wakes (with MaxStaleness below
	// 16 ms).
	minTick = 500 * time.Microsecond
)

func newPrefetch(c *Client) *prefetch {
	tick := max(c.cfg.MaxStaleness/16, minTick)
	p := &prefetch{
		c: c, stale: int64(c.cfg.MaxStaleness), tick: tick, lag: 2 * tick,
		want: make(chan struct{}, maxRefillers), stop: make(chan struct{}),
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.clock.Store(nanotime())
	p.wg.Add(1)
	go p.ticker()
	p.grow()
	p.poke()
	return p
}

// next hands out a buffered ID; false when none is left (the caller fetches
// one itself).
func (p *prefetch) next() (int64, bool) {
	if r := p.cur.Load(); r != nil && p.clock.Load() < r.deadline {
		if id := r.next.Add(1) - 1; id < r.end {
			return id, true
		}
	}
	return p.nextRun()
}

// nextRun is next once the run in hand is used up or stale: with the
// clock read, it drops stale runs (counting their IDs) and takes the next
// fresh one.
func (p *prefetch) nextRun() (int64, bool) {
	now := nanotime()
	p.advance(now)
	p.grow()
	p.mu.Lock()
	for {
		r := p.cur.Load()
		if r != nil {
			if now < r.deadline {
				if id := r.next.Add(1) - 1; id < r.end {
					p.mu.Unlock()
					return id, true
				}
			} else if n := r.left(); n > 0 {
				p.c.m.prefetchDropped.Add(float64(n))
			}
		}
		if len(p.runs) == 0 {
			p.cur.Store(nil)
			p.mu.Unlock()
			p.poke()
			return 0, false
		}
		r = p.runs[0]
		p.runs[0] = nil
		p.runs = p.runs[1:]
		p.queued -= int(r.end - r.next.Load())
		p.cur.Store(r)
		if p.queued < p.low() {
			p.poke() // a buffered send per refiller: cheap under the lock
		}
	}
}

// low is the fill below which the refillers are woken, high the one they
// fill to: each refiller has a run in the buffer and one coming.
func (p *prefetch) low() int  { return int(p.started.Load()) * p.c.cfg.Prefetch }
func (p *prefetch) high() int { return 2 * p.low() }

// advance moves the coarse clock to now, never back.
func (p *prefetch) advance(now int64) {
	for {
		old := p.clock.Load()
		if now <= old || p.clock.CompareAndSwap(old, now) {
			return
		}
	}
}

// ticker keeps the coarse clock within a tick of the monotonic one while
// no refill does (a slow caller, workers refusing).
func (p *prefetch) ticker() {
	defer p.wg.Done()
	t := time.NewTicker(p.tick)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.advance(nanotime())
		}
	}
}

// grow starts refillers up to two per known worker.
func (p *prefetch) grow() {
	want := int32(min(max(minRefillers, 2*len(*p.c.eps.Load())), maxRefillers))
	for {
		n := p.started.Load()
		if n >= want {
			return
		}
		if !p.started.CompareAndSwap(n, n+1) {
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return
		}
		p.wg.Add(1)
		p.mu.Unlock()
		go p.refill()
	}
}

// poke wakes every idle refiller.
func (p *prefetch) poke() {
	for range p.started.Load() {
		select {
		case p.want <- struct{}{}:
		default:
			return
		}
	}
}

// refill fetches runs while the buffer holds fewer than high IDs, then
// waits to be poked.
func (p *prefetch) refill() {
	defer p.wg.Done()
	n := p.c.cfg.Prefetch
	for {
		select {
		case <-p.stop:
			return
		case <-p.want:
		}
		for p.below() {
			var first int64
			ctx, cancel := context.WithTimeout(p.ctx, p.c.cfg.CallTimeout)
			err := p.c.try(ctx, func(conn *Conn) (err error) {
				first, err = conn.run(n)
				return err
			})
			cancel()
			if err != nil {
				// The calls that follow find no ID buffered and go to the
				// fleet themselves, which reports the failure to them.
				p.c.log.Debug("prefetch failed", "error", err)
				break
			}
			p.add(first, n)
		}
	}
}

// fetch is Next with the buffer empty: the caller fetches a run itself,
// takes its first ID and buffers the rest.
func (p *prefetch) fetch(ctx context.Context) (int64, error) {
	n := p.c.cfg.Prefetch
	var first int64
	err := p.c.call(ctx, func(conn *Conn) (err error) {
		first, err = conn.run(n)
		return err
	})
	if err != nil {
		return 0, err
	}
	if n > 1 {
		p.add(first+1, n-1)
	}
	return first, nil
}

// add queues the run first .. first+n-1 that just arrived. Its freshness
// left is MaxStaleness less its age by the wall clock (the ID's timestamp
// is the worker's wall clock), counted from now on the monotonic clock,
// less the coarse clock's lag.
func (p *prefetch) add(first int64, n int) {
	f, _ := snowflake.Decode(first)
	now := nanotime()
	age := (time.Now().UnixMilli() - f.UnixMs) * int64(time.Millisecond)
	r := &idRun{end: first + int64(n), deadline: now + p.stale - age - int64(p.lag)}
	r.next.Store(first)
	p.advance(now)
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.closed:
	case r.deadline <= now:
		p.c.m.prefetchDropped.Add(float64(n)) // stale on arrival
	default:
		p.runs = append(p.runs, r)
		p.queued += n
	}
}

func (p *prefetch) below() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.closed && p.queued < p.high()
}

// buffered is how many IDs wait in the buffer, for the gauge.
func (p *prefetch) buffered() float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := int64(p.queued)
	if r := p.cur.Load(); r != nil {
		n += r.left()
	}
	return float64(n)
}

// close stops the refillers and the ticker and drops the buffer.
func (p *prefetch) close() {
	p.mu.Lock()
	p.closed = true
	p.runs, p.queued = nil, 0
	p.cur.Store(nil)
	p.mu.Unlock()
	p.cancel()
	close(p.stop)
	p.wg.Wait()
}
