package client

import (
	"context"
	"sync"
	"time"

	"github.com/snowfleet/snowfleet/snowflake"
)

// prefetch is the opt-in buffer of IDs behind Next (Config.Prefetch):
// refillers fetch runs of Prefetch IDs with NEXTIDS in the background, from
// workers chosen as any call's, before the buffer runs dry, and Next hands
// out an ID from it without a round trip. IDs issued under a lease stay
// unique whatever becomes of the worker later, so a buffered run is good
// until it is stale by the caller's clock (MaxStaleness), and is dropped
// then, never handed out.
type prefetch struct {
	c      *Client
	ctx    context.Context // ends at close, and with it a refill under way
	cancel context.CancelFunc
	stale  int64 // MaxStaleness in ms
	low    int   // refill when fewer IDs than this are buffered
	mu     sync.Mutex
	runs   []idRun // in the order they were fetched
	have   int     // IDs in runs
	want   chan struct{}
	stop   chan struct{}
	wg     sync.WaitGroup
	closed bool
}

// idRun is one NEXTIDS reply not yet handed out: next, next+1, ... end-1,
// all of one millisecond. Its IDs go stale at deadline (nanotime): the
// freshness left by the wall clock when it arrived, counted on the
// monotonic clock from then on, so that Next needs no wall clock.
type idRun struct {
	next, end int64
	deadline  int64
}

// refillers fetch in parallel, so that the buffer fills faster than one
// worker's 4,096 IDs per millisecond when more than one worker serves.
const refillers = 3

func newPrefetch(c *Client) *prefetch {
	p := &prefetch{
		c: c, stale: c.cfg.MaxStaleness.Milliseconds(),
		low:  refillers * c.cfg.Prefetch,
		want: make(chan struct{}, refillers), stop: make(chan struct{}),
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	for range refillers {
		p.wg.Add(1)
		go p.refill()
	}
	p.poke()
	return p
}

// next hands out a buffered ID, dropping runs that went stale; false when
// none is left (the caller fetches one itself).
func (p *prefetch) next() (int64, bool) {
	now := nanotime()
	p.mu.Lock()
	for len(p.runs) > 0 {
		r := &p.runs[0]
		if now > r.deadline {
			n := r.end - r.next
			p.have -= int(n)
			p.runs = p.runs[1:]
			p.c.m.prefetchDropped.Add(float64(n))
			continue
		}
		id := r.next
		r.next++
		p.have--
		if r.next == r.end {
			p.runs = p.runs[1:]
		}
		low := p.have < p.low
		p.mu.Unlock()
		if low {
			p.poke()
		}
		return id, true
	}
	p.mu.Unlock()
	p.poke()
	return 0, false
}

func (p *prefetch) poke() {
	select {
	case p.want <- struct{}{}:
	default:
	}
}

// refill fetches runs while the buffer holds fewer than twice the low
// mark (one run in hand, one coming: a double buffer per refiller), then
// waits to be poked.
func (p *prefetch) refill() {
	defer p.wg.Done()
	ids := make([]int64, p.c.cfg.Prefetch) // a run is kept as its bounds: reused
	for {
		select {
		case <-p.stop:
			return
		case <-p.want:
		}
		for p.below(2 * p.low) {
			ctx, cancel := context.WithTimeout(p.ctx, p.c.cfg.CallTimeout)
			err := p.c.try(ctx, func(conn *Conn) error { return conn.NextN(ids) })
			cancel()
			if err != nil {
				// The calls that follow find no ID buffered and go to the
				// fleet themselves, which reports the failure to them.
				p.c.log.Debug("prefetch failed", "error", err)
				break
			}
			f, _ := snowflake.Decode(ids[0])
			fresh := p.stale - (time.Now().UnixMilli() - f.UnixMs) // ms left
			p.mu.Lock()
			if !p.closed {
				p.runs = append(p.runs, idRun{next: ids[0], end: ids[0] + int64(len(ids)), deadline: nanotime() + fresh*1e6})
				p.have += len(ids)
			}
			p.mu.Unlock()
		}
	}
}

func (p *prefetch) below(n int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.closed && p.have < n
}

// buffered is how many IDs wait in the buffer, for the gauge.
func (p *prefetch) buffered() float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return float64(p.have)
}

// close stops the refillers and drops the buffer.
func (p *prefetch) close() {
	p.mu.Lock()
	p.closed = true
	p.runs, p.have = nil, 0
	p.mu.Unlock()
	p.cancel()
	close(p.stop)
	p.wg.Wait()
}
