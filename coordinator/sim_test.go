//go:build sim

package coordinator

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/integration/faultproxy"
	"github.com/snowfleet/snowfleet/integration/zktest"
)

// TestSim is the scale simulation (make sim), not a unit test: 1,024
// claimers with separate sessions start at once against one local
// ZooKeeper; it reports the time until all hold distinct slots, the lease
// creates per claim, and what a 1,025th claimer does.
//
//	go test -tags sim -run TestSim -v -count=1 ./coordinator/
func TestSim(t *testing.T) {
	const n = 1024
	zs := zktest.StartWith(t, zktest.Options{TickTime: 500 * time.Millisecond})
	cfg := DefaultConfig() // session 6s, renew 1s, horizon 5s
	cfg.Servers = []string{zs.Addr()}
	log := hclog.New(&hclog.LoggerOptions{Level: hclog.Error, Output: testWriter{t}})
	initFleet(t, cfg)

	cs := make([]*Coordinator, n+1)
	for i := range cs {
		c, err := New(cfg, log.Named(fmt.Sprintf("c%04d", i)), nil)
		if err != nil {
			t.Fatal(err)
		}
		cs[i] = c
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancels := make([]context.CancelFunc, n+1)
	var wg sync.WaitGroup
	start := time.Now()
	for i, c := range cs[:n] {
		cctx, ccancel := context.WithCancel(ctx)
		cancels[i] = ccancel
		wg.Add(1)
		go func() { defer wg.Done(); _ = c.Run(cctx) }()
	}
	defer func() { cancel(); wg.Wait() }()

	// Time to all ready, sampled every 10 ms.
	var readyAt []time.Duration
	seen := make([]bool, n)
	for len(readyAt) < n {
		if time.Since(start) > 120*time.Second {
			t.Fatalf("only %d of %d ready after 120s", len(readyAt), n)
		}
		for i, c := range cs[:n] {
			if !seen[i] && c.Ready() {
				seen[i] = true
				readyAt = append(readyAt, time.Since(start))
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	all := time.Since(start)
	slots := map[string]int{}
	var creates int64
	for i, c := range cs[:n] {
		st := c.Status()
		if j, ok := slots[st.Slot]; ok {
			t.Fatalf("claimers %d and %d both hold %s", j, i, st.Slot)
		}
		slots[st.Slot] = i
		creates += st.Creates
	}
	sort.Slice(readyAt, func(i, j int) bool { return readyAt[i] < readyAt[j] })
	t.Logf("SIM: %d claimers, separate sessions, started at once: all hold distinct slots after %v", n, all.Round(time.Millisecond))
	t.Logf("SIM: ready times p50 %v, p90 %v, p99 %v, max %v",
		readyAt[n/2].Round(time.Millisecond), readyAt[n*9/10].Round(time.Millisecond),
		readyAt[n*99/100].Round(time.Millisecond), readyAt[n-1].Round(time.Millisecond))
	t.Logf("SIM: lease creates %d, %.2f per claim", creates, float64(creates)/n)

	// The 1,025th stands by, not ready, then takes the first slot released.
	extra := cs[n]
	ectx, ecancel := context.WithCancel(ctx)
	cancels[n] = ecancel
	wg.Add(1)
	go func() { defer wg.Done(); _ = extra.Run(ectx) }()
	for extra.Status().State != StateStandby {
		if time.Since(start) > 180*time.Second {
			t.Fatal("the 1,025th never stood by")
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
	st := extra.Status()
	t.Logf("SIM: 1,025th claimer: state %q, ready %v, creates %d (standing by, watching leases/)", st.State, extra.Ready(), st.Creates)
	if extra.Ready() {
		t.Fatal("the 1,025th is ready with every slot held")
	}
	victim := 517
	vslot := cs[victim].Status().Slot
	released := time.Now()
	cancels[victim]()
	for !extra.Ready() {
		if time.Since(released) > 30*time.Second {
			t.Fatal("the 1,025th did not take the released slot within 30s")
		}
		time.Sleep(time.Millisecond)
	}
	t.Logf("SIM: after claimer %d released %s, the 1,025th served it %v later (slot %s)",
		victim, vslot, time.Since(released).Round(time.Millisecond), extra.Status().Slot)
	stopStart := time.Now()
	cancel()
	wg.Wait()
	t.Logf("SIM: all released and stopped in %v", time.Since(stopStart).Round(time.Millisecond))
}

// TestSimStandbyHerd is the standby herd (make sim): 1,024 holders and 100
// standbys, then slots freed one at a time. It reports what the standbys
// cost ZooKeeper (listings of leases/, about 1,024 names each) idle and
// while slots are freed, the lease creates per freed slot (goal: at most 2)
// and how soon a freed slot is served again (goal: within 1 s).
//
//	go test -tags sim -run TestSimStandbyHerd -v -count=1 ./coordinator/
func TestSimStandbyHerd(t *testing.T) {
	const holders, standbys, freed = 1024, 100, 10
	zs := zktest.StartWith(t, zktest.Options{TickTime: 500 * time.Millisecond})
	cfg := DefaultConfig() // session 6s, renew 1s, horizon 5s
	cfg.Servers = []string{zs.Addr()}
	log := hclog.New(&hclog.LoggerOptions{Level: hclog.Error, Output: testWriter{t}})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	start := func(i int) (*Coordinator, context.CancelFunc) {
		c, err := New(cfg, log.Named(fmt.Sprintf("c%04d", i)), nil)
		if err != nil {
			t.Fatal(err)
		}
		cctx, ccancel := context.WithCancel(ctx)
		wg.Add(1)
		go func() { defer wg.Done(); _ = c.Run(cctx) }()
		return c, ccancel
	}
	waitAll := func(what string, cs []*Coordinator, ok func(*Coordinator) bool) {
		deadline := time.Now().Add(180 * time.Second)
		for _, c := range cs {
			for !ok(c) {
				if time.Now().After(deadline) {
					t.Fatalf("not all %s within 180s", what)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
	hs := make([]*Coordinator, holders)
	hcancel := make([]context.CancelFunc, holders)
	for i := range hs {
		hs[i], hcancel[i] = start(i)
	}
	waitAll("holders ready", hs, (*Coordinator).Ready)
	ss := make([]*Coordinator, standbys)
	for i := range ss {
		ss[i], _ = start(holders + i)
	}
	waitAll("standbys standing by", ss, func(c *Coordinator) bool { return c.Status().State == StateStandby })
	sum := func(f func(*Coordinator) int64) (n int64) {
		for _, c := range ss {
			n += f(c)
		}
		return n
	}
	lists := func(c *Coordinator) int64 { return c.lists.Load() }
	creates := func(c *Coordinator) int64 { return c.creates.Load() }

	time.Sleep(5 * time.Second) // past the first re-lists after standing by
	l0, t0 := sum(lists), time.Now()
	time.Sleep(20 * time.Second)
	idle := float64(sum(lists)-l0) / time.Since(t0).Seconds()
	t.Logf("HERD: %d holders, %d standbys, idle: %.1f listings of leases/ per second (%.0f names/s)",
		holders, standbys, idle, idle*holders)

	var served []time.Duration
	var perSlot []int64
	l1, t1 := sum(lists), time.Now()
	for k := 0; k < freed; k++ {
		victim := 100 + 97*k
		slot := hs[victim].Status().Slot
		c0 := sum(creates)
		released := time.Now()
		hcancel[victim]()
		var took time.Duration
		for took == 0 {
			for _, c := range ss {
				if c.Ready() && c.Status().Slot == slot {
					took = time.Since(released)
				}
			}
			if time.Since(released) > 30*time.Second {
				t.Fatalf("freed slot %s not served again within 30s", slot)
			}
			time.Sleep(time.Millisecond)
		}
		time.Sleep(2 * time.Second) // losers delete their nodes; the herd settles
		n := sum(creates) - c0
		served, perSlot = append(served, took), append(perSlot, n)
		t.Logf("HERD: freed %s: served again after %v, %d lease creates", slot, took.Round(time.Millisecond), n)
	}
	churn := float64(sum(lists)-l1) / time.Since(t1).Seconds()
	sort.Slice(served, func(i, j int) bool { return served[i] < served[j] })
	var total, most int64
	for _, n := range perSlot {
		total += n
		most = max(most, n)
	}
	t.Logf("HERD: %d slots freed one every ~2s: served again after p50 %v, max %v; lease creates per freed slot mean %.1f, max %d",
		freed, served[freed/2].Round(time.Millisecond), served[freed-1].Round(time.Millisecond), float64(total)/freed, most)
	t.Logf("HERD: while freeing: %.1f listings of leases/ per second (%.0f names/s)", churn, churn*holders)
}

// TestSimChurn is the price of the default horizon under churn (make sim):
// a fleet of 100 with one worker killed (kill -9: its session cut, no
// release) and one started every second, for 70 s, with the defaults
// (horizon 40 s, session 6 s). It reports how many slots are blocked at
// once (a dead lease node, or a stored reservation ahead with no holder):
// about churn × horizon once the first crashes' reservations run out.
//
//	go test -tags sim -run TestSimChurn -v -count=1 ./coordinator/
func TestSimChurn(t *testing.T) {
	const (
		fleet = 100
		churn = time.Second
		run   = 70 * time.Second
	)
	zs := zktest.StartWith(t, zktest.Options{TickTime: 500 * time.Millisecond})
	cfg := DefaultConfig() // session 6s, renew 1s, horizon 40s, standby horizon 5s
	log := hclog.New(&hclog.LoggerOptions{Level: hclog.Error, Output: testWriter{t}})
	obs := observer(t, zs.Addr())
	type member struct {
		c      *Coordinator
		p      *faultproxy.Proxy
		cancel context.CancelFunc
	}
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); wg.Wait() }()
	n := 0
	start := func() member {
		p := faultproxy.New(t, zs.Addr())
		c := cfg
		c.Servers = []string{p.Addr()}
		co, err := New(c, log.Named(fmt.Sprintf("c%04d", n)), nil)
		if err != nil {
			t.Fatal(err)
		}
		n++
		cctx, ccancel := context.WithCancel(ctx)
		wg.Add(1)
		go func() { defer wg.Done(); _ = co.Run(cctx) }()
		return member{co, p, ccancel}
	}
	ms := make([]member, fleet)
	for i := range ms {
		ms[i] = start()
	}
	deadline := time.Now().Add(120 * time.Second)
	for _, m := range ms {
		for !m.c.Ready() {
			if time.Now().After(deadline) {
				t.Fatal("fleet not ready within 120s")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	blocked := func() int {
		names, _, err := obs.Children(zklayout.LeasesPath(cfg.Root))
		if err != nil {
			t.Fatal(err)
		}
		live := map[string]bool{}
		for _, m := range ms {
			if st := m.c.Status(); st.LeaseNode != "" {
				live[st.LeaseNode] = true
			}
		}
		held := zklayout.Holders(names)
		sm, err := tree.ReadSlotMap(obs, cfg.Root)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now().UnixMilli()
		b := 0
		for s, rec := range sm.Slots {
			if h, ok := held[s]; ok {
				if !live[h.Name] {
					b++
				}
			} else if rec.ReservedUntilMs > now {
				b++
			}
		}
		return b
	}
	began := time.Now()
	most, k := 0, 0
	tick := time.NewTicker(churn)
	defer tick.Stop()
	for time.Since(began) < run {
		<-tick.C
		victim := k % fleet
		ms[victim].p.Blackhole() // kill -9
		ms[victim].cancel()
		ms[victim] = start()
		k++
		if k%5 == 0 {
			b := blocked()
			most = max(most, b)
			t.Logf("CHURN: after %2d s (%d restarts): %d slots blocked", int(time.Since(began).Seconds()), k, b)
		}
	}
	t.Logf("CHURN: fleet %d, 1 restart/s for %v, horizon %v, session %v: at most %d slots blocked at once (churn × horizon = %d)",
		fleet, run, cfg.Horizon, cfg.SessionTimeout, most, int(cfg.Horizon/churn))
}
