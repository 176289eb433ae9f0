//go:build integration

package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/snowfleet/snowfleet/snowflake"
	"github.com/snowfleet/snowfleet/worker/client"
)

// Load the collector puts on the fleet: small batches with pauses, so that
// a 2-core machine that also runs three JVMs and up to 8 workers keeps up,
// and the suite still gathers well over a million IDs.
const (
	batch       = 100
	pause       = 15 * time.Millisecond
	callTimeout = 3 * time.Second
	refresh     = 300 * time.Millisecond
)

// stream is one client's sequence of IDs, in the order it got them.
type stream struct {
	name string
	// container is the one worker a redis stream talks to ("" for the Go client).
	container string

	mu         sync.Mutex
	ids        []int64
	batches    []arrival      // when each run of ids arrived
	checked    int            // batches already checked against ceilings
	last       map[int]int64  // slot index -> last ID seen from it
	violations []string       // IDs of a slot that did not increase
	badIDs     []string       // IDs that do not decode or are outside our datacenter
	errs       map[string]int // refusals and failures by their first word (NOLEASE, CLOCKBACK, dial …)
}

// arrival marks the IDs of one reply: ids[previous end:end], received at at.
type arrival struct {
	at  time.Time
	end int
}

func newStream(name, container string) *stream {
	return &stream{name: name, container: container, last: map[int]int64{}, errs: map[string]int{}}
}

// fail counts a failed call by the first word of its error.
func (s *stream) fail(err error) {
	word, _, _ := strings.Cut(err.Error(), " ")
	s.mu.Lock()
	s.errs[word]++
	s.mu.Unlock()
}

// add keeps the IDs of one reply received at at.
func (s *stream) add(at time.Time, ids ...int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer func() { s.batches = append(s.batches, arrival{at: at, end: len(s.ids)}) }()
	for _, id := range ids {
		f, err := snowflake.Decode(id)
		if err != nil || f.Datacenter != datacenter {
			s.badIDs = append(s.badIDs, fmt.Sprintf("%d (%v, fields %+v)", id, err, f))
			continue
		}
		slot := f.Slot().Index()
		if prev, ok := s.last[slot]; ok && id <= prev {
			s.violations = append(s.violations, fmt.Sprintf("%s: slot %s gave %d after %d", s.name, f.Slot(), id, prev))
		}
		s.last[slot] = id
		s.ids = append(s.ids, id)
	}
}

// counters of what clients saw, by kind of client.
type counters struct {
	ids, clientErrs, redisErrs atomic.Int64
	// protocolErrs are replies the Go client rejected as breaking the
	// protocol (a repeated or descending ID in a batch, …), seen through
	// its log: it retries them elsewhere, so the call itself succeeds.
	protocolErrs atomic.Int64
}

type snapshot struct {
	ids, clientErrs, redisErrs, protocolErrs int64
	client                                   clientMetrics
}

func (c *Collector) snap() snapshot {
	return snapshot{c.n.ids.Load(), c.n.clientErrs.Load(), c.n.redisErrs.Load(), c.n.protocolErrs.Load(), c.clientMetrics()}
}

// Collector draws IDs from every worker without pause, through the Go
// client (a static list of the published ports, rebuilt as workers come and
// go) and through go-redis (one connection per worker container).
type Collector struct {
	stack *Stack
	log   func(string, ...any)
	n     counters

	mu       sync.Mutex
	streams  []*stream
	redis    map[string]*redisRunner // container ID -> its runner
	errLog   map[string]int          // error text (shortened) -> count, for the report
	errEx    map[string]string       // shortened -> the first full text
	causes   []string                // the Go client's worker failures (the first few), behind its retries
	nCauses  int                     // how many there were
	cli      *client.Client
	cliAddrs []string
	cliMu    sync.RWMutex // calls hold it shared; swapping the client holds it
	cliGen   int
	reg      *prometheus.Registry // every client's metrics, told apart by a "gen" label

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

type redisRunner struct {
	addr   string
	cancel context.CancelFunc
	done   chan struct{}
}

// StartCollector starts drawing; Stop ends it.
func StartCollector(ctx context.Context, st *Stack, log func(string, ...any)) *Collector {
	ctx, cancel := context.WithCancel(ctx)
	c := newCollector(st, log, cancel)
	c.sync(ctx)
	c.wg.Add(3)
	go func() { defer c.wg.Done(); c.follow(ctx) }()
	// Two Go client streams: batches, and single IDs.
	go func() { defer c.wg.Done(); c.clientLoop(ctx, newStream("go-client/nextids", ""), batch) }()
	go func() { defer c.wg.Done(); c.clientLoop(ctx, newStream("go-client/nextid", ""), 1) }()
	return c
}

func newCollector(st *Stack, log func(string, ...any), cancel context.CancelFunc) *Collector {
	return &Collector{stack: st, log: log, redis: map[string]*redisRunner{}, errLog: map[string]int{},
		errEx: map[string]string{}, cancel: cancel, reg: prometheus.NewRegistry()}
}

// Stop ends every stream and closes the client.
func (c *Collector) Stop() {
	c.cancel()
	c.wg.Wait()
	c.mu.Lock()
	rs := c.redis
	c.redis = map[string]*redisRunner{}
	c.mu.Unlock()
	for _, r := range rs {
		r.cancel()
		<-r.done
	}
	c.cliMu.Lock()
	if c.cli != nil {
		c.cli.Close()
		c.cli = nil
	}
	c.cliMu.Unlock()
}

// follow keeps the runners and the client's worker list in step with the
// containers.
func (c *Collector) follow(ctx context.Context) {
	for sleep(ctx, refresh) == nil {
		c.sync(ctx)
	}
}

func (c *Collector) sync(ctx context.Context) {
	ws, err := c.stack.Workers(ctx)
	if err != nil {
		return // docker busy or the context ended: next round
	}
	var addrs []string
	live := map[string]string{}
	for _, w := range ws {
		if w.Running && w.Addr("7609") != "" {
			live[w.ID] = w.Addr("7609")
			addrs = append(addrs, w.Addr("7609"))
		}
	}
	slices.Sort(addrs)
	c.mu.Lock()
	for id, r := range c.redis {
		if live[id] != r.addr {
			r.cancel()
			delete(c.redis, id)
		}
	}
	for _, w := range ws {
		if a := live[w.ID]; a != "" && c.redis[w.ID] == nil {
			rctx, cancel := context.WithCancel(ctx)
			r := &redisRunner{addr: a, cancel: cancel, done: make(chan struct{})}
			c.redis[w.ID] = r
			s := newStream(fmt.Sprintf("redis/%s@%s", w.Short(), a), w.ID)
			c.streams = append(c.streams, s)
			go func() { defer close(r.done); c.redisLoop(rctx, s, a) }()
		}
	}
	c.mu.Unlock()
	if slices.Equal(addrs, c.cliAddrs) || len(addrs) == 0 {
		return
	}
	c.useClient(addrs)
}

// useClient replaces the Go client by one of a static list of workers.
func (c *Collector) useClient(addrs []string) {
	c.cliGen++
	cfg := client.DefaultConfig()
	cfg.Static = addrs
	cfg.CallTimeout = callTimeout
	cfg.RequestTimeout = time.Second
	cfg.Backoff = 100 * time.Millisecond
	cfg.MaxBackoff = time.Second
	cfg.ConstLabels = map[string]string{"gen": strconv.Itoa(c.cliGen)}
	cli, err := client.New(cfg, clientLog{Logger: hclog.NewNullLogger(), n: &c.n.protocolErrs, note: c.noteCause}, c.reg)
	if err != nil {
		c.log("client with %v: %v", addrs, err)
		return
	}
	c.cliMu.Lock()
	old := c.cli
	c.cli, c.cliAddrs = cli, addrs
	c.cliMu.Unlock()
	if old != nil {
		old.Close()
	}
}

func (c *Collector) clientLoop(ctx context.Context, s *stream, n int) {
	c.mu.Lock()
	c.streams = append(c.streams, s)
	c.mu.Unlock()
	for ctx.Err() == nil {
		c.cliMu.RLock()
		cli := c.cli
		var ids []int64
		var err error
		if cli == nil {
			err = errors.New("no workers yet")
		} else {
			cctx, cancel := context.WithTimeout(ctx, callTimeout)
			if n == 1 {
				var id int64
				id, err = cli.Next(cctx)
				ids = []int64{id}
			} else {
				ids, err = cli.NextN(cctx, n)
			}
			cancel()
		}
		c.cliMu.RUnlock()
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			c.n.clientErrs.Add(1)
			c.noteErr("go-client", err)
			s.fail(err)
			_ = sleep(ctx, 50*time.Millisecond)
			continue
		}
		s.add(time.Now(), ids...)
		c.n.ids.Add(int64(len(ids)))
		if n > 1 {
			_ = sleep(ctx, pause)
		}
	}
}

func (c *Collector) redisLoop(ctx context.Context, s *stream, addr string) {
	rdb := newRedis(addr)
	defer rdb.Close()
	for i := 0; ctx.Err() == nil; i++ {
		var ids []int64
		var err error
		if i%10 == 9 {
			var id int64
			id, err = rdb.Do(ctx, "NEXTID").Int64()
			ids = []int64{id}
		} else {
			ids, err = rdb.Do(ctx, "NEXTIDS", batch).Int64Slice()
		}
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			c.n.redisErrs.Add(1)
			c.noteErr("redis", err)
			s.fail(err)
			_ = sleep(ctx, 100*time.Millisecond)
			continue
		}
		s.add(time.Now(), ids...)
		c.n.ids.Add(int64(len(ids)))
		_ = sleep(ctx, pause)
	}
}

// noteErr counts an error by its first words (addresses and numbers vary).
func (c *Collector) noteErr(via string, err error) {
	msg := err.Error()
	if i := strings.Index(msg, " (worker"); i > 0 {
		msg = msg[:i]
	}
	fields := strings.Fields(msg)
	for i, f := range fields {
		if strings.ContainsAny(f, "0123456789") {
			fields[i] = "…"
		}
	}
	if len(fields) > 8 {
		fields = fields[:8]
	}
	key := via + ": " + strings.Join(fields, " ")
	c.mu.Lock()
	c.errLog[key]++
	if _, ok := c.errEx[key]; !ok {
		c.errEx[key] = err.Error()
	}
	c.mu.Unlock()
}

// noteCause keeps the first few worker failures the Go client logged
// (each one behind a retry or a failed call), with the time and worker.
func (c *Collector) noteCause(addr string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nCauses++
	if len(c.causes) < 5 {
		c.causes = append(c.causes, fmt.Sprintf("%s %s: %v", time.Now().Format("15:04:05.000"), addr, err))
	}
}

// TakeCauses returns the Go client's worker failures noted since the last
// call: the first few in full, and how many there were.
func (c *Collector) TakeCauses() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.causes
	if c.nCauses > len(out) {
		out = append(out, fmt.Sprintf("and %d more", c.nCauses-len(out)))
	}
	c.causes, c.nCauses = nil, 0
	return out
}

// TakeErrors returns the errors noted since the last call, by kind, and one
// full message of each kind.
func (c *Collector) TakeErrors() (counts map[string]int, examples map[string]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	counts, examples = c.errLog, c.errEx
	c.errLog, c.errEx = map[string]int{}, map[string]string{}
	return counts, examples
}

// IDs is every ID collected so far, and the violations and bad IDs seen.
func (c *Collector) IDs() (ids []int64, violations, bad []string) {
	c.mu.Lock()
	streams := slices.Clone(c.streams)
	c.mu.Unlock()
	for _, s := range streams {
		s.mu.Lock()
		ids = append(ids, s.ids...)
		violations = append(violations, s.violations...)
		bad = append(bad, s.badIDs...)
		s.mu.Unlock()
	}
	return ids, violations, bad
}

// ContainerIDs is every ID the direct (go-redis) streams got from one
// container, over all its published ports.
func (c *Collector) ContainerIDs(id string) []int64 { return c.ContainerIDsSince(id, time.Time{}) }

// ContainerIDsSince is the IDs the direct streams of one container received
// after since.
func (c *Collector) ContainerIDsSince(id string, since time.Time) []int64 {
	c.mu.Lock()
	streams := slices.Clone(c.streams)
	c.mu.Unlock()
	var ids []int64
	for _, s := range streams {
		if s.container != id {
			continue
		}
		s.mu.Lock()
		start := 0
		for _, b := range s.batches {
			if b.at.After(since) {
				ids = append(ids, s.ids[start:b.end]...)
			}
			start = b.end
		}
		s.mu.Unlock()
	}
	return ids
}

// ContainerErrors is the failed calls of the direct streams of one
// container so far, by the first word of the error (NOLEASE, CLOCKBACK, …).
func (c *Collector) ContainerErrors(id string) map[string]int {
	c.mu.Lock()
	streams := slices.Clone(c.streams)
	c.mu.Unlock()
	errs := map[string]int{}
	for _, s := range streams {
		if s.container != id {
			continue
		}
		s.mu.Lock()
		for k, n := range s.errs {
			errs[k] += n
		}
		s.mu.Unlock()
	}
	return errs
}

// quietRedis drops go-redis's own log lines (a dial refused while a worker
// restarts); the collector counts those errors itself.
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}
