package client

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/integration/fleettest"
	"github.com/snowfleet/snowfleet/snowflake"
	"github.com/snowfleet/snowfleet/snowflake/configerr"
)

// TestPrefetchServesFromBuffer: with Prefetch, Next hands out IDs from
// runs fetched in the background from every worker: all unique, all from
// the fleet's slots, with far fewer requests than calls; and Close stops
// the refills.
func TestPrefetchServesFromBuffer(t *testing.T) {
	_, ws := startFleet(t, 3)
	cfg := DefaultConfig()
	cfg.Static = []string{ws[0].Addr, ws[1].Addr, ws[2].Addr}
	cfg.Prefetch = 512
	c, _ := newTestClient(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const callers, each = 8, 5000
	ids := make([]int64, callers*each)
	var wg sync.WaitGroup
	for g := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				id, err := c.Next(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				ids[g*each+i] = id
			}
		}()
	}
	wg.Wait()
	checkUnique(t, ids)
	slots := slotsOf(ids)
	if len(slots) != 3 {
		t.Errorf("IDs came from slots %v, want all 3 workers'", slots)
	}
	requests := value(c.m.ok)
	if requests > float64(len(ids))/100 {
		t.Errorf("%v requests for %d IDs: Next did not hand out from the buffer", requests, len(ids))
	}
	t.Logf("%d IDs from %v requests, slots %v", len(ids), requests, slots)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	after := value(c.m.ok)
	time.Sleep(100 * time.Millisecond)
	if got := value(c.m.ok); got != after {
		t.Errorf("refills went on after Close: %v requests, then %v", after, got)
	}
	if _, err := c.Next(ctx); !isClosed(err) {
		t.Errorf("Next after Close = %v, want ErrClosed", err)
	}
}

// TestPrefetchDropsStaleIDs: a buffered run older than MaxStaleness by the
// caller's clock is dropped and counted, never handed out.
func TestPrefetchDropsStaleIDs(t *testing.T) {
	_, ws := startFleet(t, 1)
	cfg := DefaultConfig()
	cfg.Static = []string{ws[0].Addr}
	cfg.Prefetch, cfg.MaxStaleness = 100, 50*time.Millisecond
	c, _ := newTestClient(t, cfg)
	if !fleettest.WaitFor(context.Background(), 10*time.Second, func() bool { return c.prefetched() >= 100 }) {
		t.Fatalf("the buffer never filled: %v IDs", c.prefetched())
	}
	// Stop the refills from replacing what goes stale: pause the worker.
	ws[0].Pause()
	defer ws[0].Resume()
	time.Sleep(120 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	id, err := c.Next(ctx)
	if err == nil {
		f, _ := snowflake.Decode(id)
		if age := time.Now().UnixMilli() - f.UnixMs; age > 50 {
			t.Fatalf("Next handed out an ID %dms old, past MaxStaleness 50ms", age)
		}
	}
	if dropped := value(c.m.prefetchDropped); dropped < 100 {
		t.Errorf("snowflake_client_prefetch_dropped_total = %v, want the buffered run (>= 100)", dropped)
	}
}

func TestPrefetchConfigChecked(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Static = []string{"127.0.0.1:1"}
	for _, tc := range []struct {
		prefetch int
		stale    time.Duration
		field    string
	}{{-1, time.Second, "Prefetch"}, {MaxBatch + 1, time.Second, "Prefetch"}, {100, time.Millisecond, "MaxStaleness"}} {
		cfg.Prefetch, cfg.MaxStaleness = tc.prefetch, tc.stale
		var ce *configerr.Error
		if err := cfg.Validate(); !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("Prefetch %d MaxStaleness %v: %v, want an error naming %s", tc.prefetch, tc.stale, err, tc.field)
		}
	}
}
