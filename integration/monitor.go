//go:build integration

package integration

import (
	"context"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/hashicorp/go-hclog"

	"github.com/snowfleet/snowfleet/coordinator/zkconn"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
)

// How often the monitor looks, while scenarios run.
const (
	statusEvery = 200 * time.Millisecond // every worker's /status
	leasesEvery = time.Second            // leases/ as ZooKeeper lists it
	listEvery   = time.Second            // which containers exist
)

// sample is one poll of a worker's /status.
type sample struct {
	at time.Time // when the request was sent: the status is at least this recent
	workerStatus
}

// Monitor polls every worker's /status all the time, keeping each
// holder's confirmed ceiling as it was at each moment, and checks the
// holders against each other (every status round) and against the lease
// nodes ZooKeeper lists (every second), inside the scenarios and not only
// at their calm end.
type Monitor struct {
	st *Stack

	mu       sync.Mutex
	samples  map[string][]sample // container ID -> polls in time order
	names    map[string]string   // container ID -> worker_N
	live     []Container
	problems []string
	seen     map[string]bool // problems already reported
	rounds   int             // status rounds
	zkRounds int             // rounds with a ZooKeeper listing

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// StartMonitor starts polling; Stop ends it.
func StartMonitor(ctx context.Context, st *Stack) *Monitor {
	ctx, cancel := context.WithCancel(ctx)
	m := &Monitor{st: st, samples: map[string][]sample{}, names: map[string]string{}, seen: map[string]bool{}, cancel: cancel}
	m.list(ctx)
	m.wg.Add(3)
	go func() {
		defer m.wg.Done()
		for sleep(ctx, listEvery) == nil {
			m.list(ctx)
		}
	}()
	go func() {
		defer m.wg.Done()
		for sleep(ctx, statusEvery) == nil {
			m.poll(ctx)
		}
	}()
	go func() { defer m.wg.Done(); m.watchLeases(ctx) }()
	return m
}

// Stop ends the polling.
func (m *Monitor) Stop() { m.cancel(); m.wg.Wait() }

func (m *Monitor) list(ctx context.Context) {
	ws, err := m.st.Workers(ctx)
	if err != nil {
		return
	}
	m.mu.Lock()
	m.live = ws
	for _, w := range ws {
		m.names[w.ID] = w.Short()
	}
	m.mu.Unlock()
}

// poll reads every running worker's /status at once, then checks the
// holders of each slot against each other.
func (m *Monitor) poll(ctx context.Context) {
	m.mu.Lock()
	ws := slices.Clone(m.live)
	m.mu.Unlock()
	var wg sync.WaitGroup
	got := make([]*sample, len(ws))
	for i, w := range ws {
		if !w.Running || w.Paused {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			at := time.Now()
			cctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			if s, err := getStatus(cctx, w); err == nil {
				got[i] = &sample{at: at, workerStatus: s}
			}
		}()
	}
	wg.Wait()
	var hs []holding
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rounds++
	for i, s := range got {
		if s == nil {
			continue
		}
		m.samples[ws[i].ID] = append(m.samples[ws[i].ID], *s)
		hs = append(hs, holding{worker: ws[i].Short(), st: s.workerStatus})
	}
	m.report(overlapProblems(hs))
}

// watchLeases lists leases/ every second and checks the holders the
// workers report against it.
func (m *Monitor) watchLeases(ctx context.Context) {
	var conn *zk.Conn
	var servers []string
	failed := 0
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	for sleep(ctx, leasesEvery) == nil {
		now, err := m.st.ZKServers(ctx)
		if err != nil {
			continue // no server runs: nothing to list
		}
		if conn == nil || !slices.Equal(now, servers) {
			if conn != nil {
				conn.Close()
			}
			conn, servers = nil, now
			c, err := zkconn.Dial(now, "", 10*time.Second, hclog.NewNullLogger())
			if err != nil {
				continue
			}
			conn = c
		}
		names, err := childrenWithin(conn, 2*time.Second)
		if err != nil {
			// An ensemble restored or rebuilt refuses a session that has
			// seen a later zxid, for ever: dial afresh after a few misses.
			if failed++; failed >= 3 {
				conn.Close()
				conn, failed = nil, 0
			}
			continue
		}
		failed = 0
		m.mu.Lock()
		hs := m.latest(time.Now().Add(-2 * statusEvery))
		m.zkRounds++
		m.report(holderProblems(names, hs))
		m.mu.Unlock()
	}
}

// childrenWithin lists leases/, bounded: go-zookeeper calls have no timeout
// of their own, and the ensemble may have no quorum.
func childrenWithin(conn *zk.Conn, limit time.Duration) ([]string, error) {
	type res struct {
		names []string
		err   error
	}
	ch := make(chan res, 1)
	go func() {
		names, _, err := conn.Children(zklayout.LeasesPath(zkRoot))
		ch <- res{names, err}
	}()
	select {
	case r := <-ch:
		return r.names, r.err
	case <-time.After(limit):
		return nil, context.DeadlineExceeded
	}
}

// latest is each worker's newest status taken after since; under m.mu.
func (m *Monitor) latest(since time.Time) []holding {
	var hs []holding
	for id, ss := range m.samples {
		if len(ss) > 0 && ss[len(ss)-1].at.After(since) {
			hs = append(hs, holding{worker: m.names[id], st: ss[len(ss)-1].workerStatus})
		}
	}
	sort.Slice(hs, func(i, j int) bool { return hs[i].worker < hs[j].worker })
	return hs
}

// report keeps new problems; under m.mu.
func (m *Monitor) report(ps []string) {
	for _, p := range ps {
		if !m.seen[p] {
			m.seen[p] = true
			m.problems = append(m.problems, time.Now().Format("15:04:05.000")+" "+p)
		}
	}
}

// monitorMark is where a scenario began, in the monitor's counts.
type monitorMark struct{ problems, rounds, zkRounds int }

// Mark returns the current counts.
func (m *Monitor) Mark() monitorMark {
	m.mu.Lock()
	defer m.mu.Unlock()
	return monitorMark{len(m.problems), m.rounds, m.zkRounds}
}

// Since returns the problems found and the rounds done since a mark.
func (m *Monitor) Since(k monitorMark) (problems []string, rounds, zkRounds int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.problems[k.problems:]), m.rounds - k.rounds, m.zkRounds - k.zkRounds
}

// Samples is a copy of every poll so far, by container ID.
func (m *Monitor) Samples() map[string][]sample {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string][]sample, len(m.samples))
	for id, ss := range m.samples {
		out[id] = slices.Clone(ss)
	}
	return out
}

// Last is a container's newest status, and when it was taken.
func (m *Monitor) Last(id string) (sample, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ss := m.samples[id]
	if len(ss) == 0 {
		return sample{}, false
	}
	return ss[len(ss)-1], true
}

// MaxCeiling is the highest ceiling a container reported under one lease
// node in the polls sent at or after since (the zero time: every poll), 0
// if there was none.
func (m *Monitor) MaxCeiling(id, lease string, since time.Time) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var c int64
	for _, s := range m.samples[id] {
		if s.LeaseNode == lease && !s.at.Before(since) {
			c = max(c, s.CeilingMs)
		}
	}
	return c
}
