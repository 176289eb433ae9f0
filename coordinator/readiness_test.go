package coordinator

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/integration/zktest"
	"github.com/snowfleet/snowfleet/snowflake"
)

// offsetClock is the real clock plus an offset the test moves, or, while
// pinned is set, that Unix ms.
type offsetClock struct{ offset, pinned atomic.Int64 }

func (c *offsetClock) UnixNano() int64 {
	if ms := c.pinned.Load(); ms != 0 {
		return ms * int64(time.Millisecond)
	}
	return time.Now().UnixNano() + c.offset.Load()
}
func (c *offsetClock) Sleep(d time.Duration) { snowflake.SystemClock{}.Sleep(d) }

// TestReadiness: the verdict and its figures, as the worker formats them:
// no lease before Run, ready with the slot once held, and clock-back with
// how far behind once the clock steps back past MaxRollbackWait; Ready
// agrees with Readiness throughout.
func TestReadiness(t *testing.T) {
	clock := &offsetClock{}
	cfg := insecureDefault()
	cfg.Servers = []string{zktest.Start(t).Addr()}
	cfg.Root = fmt.Sprintf("/readiness-%d", time.Now().UnixNano())
	cfg.SessionTimeout, cfg.Renew, cfg.Horizon = 2*time.Second, 200*time.Millisecond, 5*time.Second
	cfg.Clock = clock
	cfg.OnClockBack = snowflake.Refuse
	initFleet(t, cfg)
	c, err := New(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := c.Readiness(); r.Ready() || c.Ready() || r.Reason != ReasonNoLease || r.State != StateStopped || r.Slot != "" {
		t.Fatalf("before Run: %+v, want not ready for no lease", r)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	})
	deadline := time.Now().Add(15 * time.Second)
	for !c.Ready() {
		if time.Now().After(deadline) {
			t.Fatalf("not ready after 15s: %+v", c.Readiness())
		}
		time.Sleep(10 * time.Millisecond)
	}
	r := c.Readiness()
	if !r.Ready() || r.Reason != ReasonNone || r.State != StateServing || r.Slot == "" || r.CeilingMs <= r.NowMs {
		t.Fatalf("held: %+v, want ready, serving, a slot, the ceiling ahead", r)
	}
	if _, err := c.Generator().NextN(1); err != nil {
		t.Fatal(err)
	}
	clock.offset.Add(int64(-3 * time.Second))
	r = c.Readiness()
	if r.Ready() || c.Ready() || r.Reason != ReasonClockBack {
		t.Fatalf("clock 3s back: %+v, want clock-back", r)
	}
	if behind := r.LastIssuedMs - r.NowMs; behind < 2900 || behind > 3100 {
		t.Fatalf("clock 3s back: %dms behind the last issued ID, want about 3000: %+v", behind, r)
	}
	clock.offset.Store(0)
	// At its ceiling the generator still issues; the verdict agrees (it
	// said not ready there, issue 19). A renewal may raise the ceiling
	// between the two reads: try until the clock sits on it.
	atCeiling := false
	for i := 0; i < 50 && !atCeiling; i++ {
		clock.pinned.Store(c.Generator().Ceiling())
		r = c.Readiness()
		if r.NowMs != r.CeilingMs || r.Reason == ReasonSkew {
			continue // a renewal ran meanwhile, on the pinned clock
		}
		atCeiling = true
		if !r.Ready() || !c.Ready() {
			t.Fatalf("clock at the ceiling: %+v, want ready, as the generator is", r)
		}
		if _, err := c.Generator().NextN(1); err != nil {
			t.Fatalf("generator at its ceiling: %v", err)
		}
	}
	clock.pinned.Store(0)
	if !atCeiling {
		t.Fatal("never caught the clock at the ceiling")
	}
}
