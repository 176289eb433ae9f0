package worker

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/snowfleet/snowfleet/snowflake"
)

// Fairness counted in IDs (issue 38). The generator makes MaxBatch IDs per
// millisecond; a request costs the IDs it takes (NEXTID 1, NEXTIDS n and
// NEXTRANGE n: n, whatever the size of the reply; GET /ids?count=n: n).
// Each requester (a RESP connection, an IDs-over-HTTP connection) has a
// budget per generator millisecond: MaxBatch shared among the requesters
// that asked for IDs in this millisecond or the one before. A request that
// fits what is left of its requester's budget is light; one that does not
// is heavy, and gives way while light requests wait for the generator, on
// any loop, goroutine or HTTP connection, unless no heavy request has taken
// IDs for heavyWaitMs of the generator's milliseconds: heavy ones are
// slowed, never starved. Alone, a requester's budget is the whole
// millisecond: nobody is held back when nobody else asks.
//
// Counting requests alone let 256 connections pipelining NEXTRANGE 2048
// (half a millisecond each, a short reply) hold a client of single NEXTIDs
// at 248 ms: each took its turn in the fresh millisecond before it.

// heavyWaitMs bounds how long, in the generator's milliseconds, heavy
// requests give way to light ones in a row, server-wide: after that the
// next heavy one tries, so a batching client is slowed under contention,
// never starved. The bound is the server's, not each request's: counted
// per request (8 times in a row, then one try), hundreds of heavy
// connections out of step had one at its try whenever a millisecond
// began, and it took the millisecond from a light request about to take
// an ID of it on the other loop half the time (NEXTID p99 9-14 ms).
const heavyWaitMs = 8

// bigDefer is how long a heavy request gives way before it looks again.
const bigDefer = 100 * time.Microsecond

// idFair is the server's side of the rule: who asks for IDs, and who waits.
type idFair struct {
	// lightWaiting counts the light requests waiting for the generator's
	// next millisecond, on every loop, goroutine and HTTP connection.
	lightWaiting atomic.Int64
	// ms is the generator millisecond cur counts the requesters of; prev
	// counted the one before.
	ms        atomic.Int64
	cur, prev atomic.Int64
	// heavyMs is the generator millisecond a heavy request last took IDs
	// in (giveWay).
	heavyMs atomic.Int64
	// heavy lets one heavy request of a blocking requester at a time at
	// the generator (nextWaiting).
	heavy sync.Mutex
	// deferrals counts heavy requests giving way (yield, loop.unpark).
	deferrals prometheus.Counter
}

// register makes the rule's metrics: how often heavy requests gave way,
// and a requester's budget now. Without a registry they count unseen.
func (f *idFair) register(reg prometheus.Registerer) error {
	f.deferrals = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "snowflake_worker_fair_deferrals_total",
		Help: "Times a request for more IDs than its connection's budget gave way to requests within theirs waiting for the generator.",
	})
	budget := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "snowflake_worker_fair_budget_ids",
		Help: "A connection's budget of IDs per generator millisecond now: 4096 shared among the connections that asked for IDs in this millisecond or the one before.",
	}, func() float64 { return float64(f.budget()) })
	if reg == nil {
		return nil
	}
	for _, c := range []prometheus.Collector{f.deferrals, budget} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("register fairness metrics: %w", err)
		}
	}
	return nil
}

// enter counts a requester asking for IDs in generator millisecond ms for
// the first time. Two requesters entering a new millisecond at once may
// lose a count: the budget is a share, not an account.
func (f *idFair) enter(ms int64) {
	if old := f.ms.Load(); old != ms && f.ms.CompareAndSwap(old, ms) {
		f.prev.Store(f.cur.Swap(0))
	}
	f.cur.Add(1)
}

// budget is a requester's share of a millisecond's IDs now.
func (f *idFair) budget() int {
	return snowflake.MaxBatch / int(max(f.cur.Load(), f.prev.Load(), 1))
}

// giveWay says whether a heavy request gives way in the generator's
// millisecond ms: light ones wait, and a heavy one took IDs within
// heavyWaitMs.
func (f *idFair) giveWay(ms int64) bool {
	return f.lightWaiting.Load() > 0 && ms-f.heavyMs.Load() < heavyWaitMs
}

// idShare is one requester's side: the IDs it took in the generator's
// current millisecond.
type idShare struct {
	ms   int64
	used int
}

// light says whether n more IDs fit the requester's budget in the
// generator's millisecond ms, counting the requester in it the first time.
func (sh *idShare) light(f *idFair, ms int64, n int) bool {
	if sh.ms != ms {
		sh.ms, sh.used = ms, 0
		f.enter(ms)
	}
	return sh.used+n <= f.budget()
}

// yield says whether a request of n IDs gives way now: it is heavy and
// giveWay says so.
func (sh *idShare) yield(f *idFair, ms int64, n int) bool {
	if sh.light(f, ms, n) || !f.giveWay(ms) {
		return false
	}
	f.deferrals.Inc()
	return true
}

// took records n IDs taken (after light or yield, in the same
// millisecond), and when they were a heavy request's.
func (sh *idShare) took(f *idFair, n int) {
	if sh.used+n > f.budget() {
		f.heavyMs.Store(sh.ms)
	}
	sh.used += n
}

// nextWaiting takes n IDs for a requester that may block (a goroutine per
// connection, IDs over HTTP) under the rule. A light request that must
// wait for the next millisecond is counted as waiting meanwhile, so that
// heavy ones everywhere give way. Heavy requests go one at a time (heavy):
// each would take most of a millisecond, so nothing is lost, and the
// others wait on the lock instead of waking, hundreds of goroutines each
// millisecond, to find the millisecond taken; the one in front gives way
// (bigDefer at a time) while light requests wait, and waits for the next
// millisecond on a timer, not in NextN, whose sleeper keeps its P (one of
// two on this machine, which the epoll loops need).
func (f *idFair) nextWaiting(sh *idShare, g *snowflake.Generator, n int) (int64, error) {
	if !sh.light(f, g.LastMs(), n) {
		f.heavy.Lock()
		defer f.heavy.Unlock()
		for {
			if sh.yield(f, g.LastMs(), n) {
				time.Sleep(bigDefer)
				continue
			}
			first, retry, err := g.TryNextN(n)
			if retry > 0 {
				time.Sleep(retry)
				continue
			}
			if err == nil {
				sh.took(f, n)
			}
			return first, err
		}
	}
	first, retry, err := g.TryNextN(n)
	if retry > 0 {
		// NextN waits for the millisecond precisely (one sleeper, the
		// others on its gate).
		f.lightWaiting.Add(1)
		first, err = g.NextN(n)
		f.lightWaiting.Add(-1)
	}
	if err == nil {
		sh.took(f, n)
	}
	return first, err
}
