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
	"github.com/snowfleet/snowfleet/coordinator/zktest"
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
