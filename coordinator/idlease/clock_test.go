package idlease

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/coordinator"
	"github.com/snowfleet/snowfleet/integration/zktest"
	"github.com/snowfleet/snowfleet/snowflake"
)

// testClock is the real clock shifted by an offset the test moves.
type testClock struct{ offset atomic.Int64 }

func (c *testClock) UnixNano() int64       { return time.Now().UnixNano() + c.offset.Load() }
func (c *testClock) Sleep(d time.Duration) { snowflake.SystemClock{}.Sleep(d) }
func (c *testClock) Shift(d time.Duration) { c.offset.Add(int64(d)) }

// The clock steps back 300 ms under a lease issuing IDs. Logical: Next
// goes on at once from the last timestamp issued, within the ceiling.
// Refuse: Next waits for the clock to catch up (a caller whose context
// ends first is told clock_back), then issues above what was issued
// before the step. Never an ID twice.
func TestEmbeddedClockBack(t *testing.T) {
	for _, policy := range []snowflake.ClockBackPolicy{snowflake.Logical, snowflake.Refuse} {
		t.Run(policy.String(), func(t *testing.T) {
			zs := zktest.Start(t)
			obs := dial(t, zs.Addr())
			initRoot(t, obs, "/clock")
			clock := &testClock{}
			cfg := testConfig("/clock", zs.Addr())
			cfg.Clock, cfg.OnClockBack = clock, policy
			l := openLease(t, cfg, "A")
			ctx := context.Background()
			seen := map[int64]bool{}
			var last int64
			take := func(n int) {
				t.Helper()
				for i := 0; i < n; i++ {
					id, err := l.Next(ctx)
					if err != nil {
						t.Fatal(err)
					}
					if seen[id] || id <= last {
						t.Fatalf("ID %d after %d: repeated or not increasing", id, last)
					}
					seen[id], last = true, id
				}
			}
			take(2000)
			clock.Shift(-300 * time.Millisecond)
			if policy == snowflake.Refuse {
				short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
				_, err := l.Next(short)
				cancel()
				var nr *NotReadyError
				if !errors.As(err, &nr) || nr.Readiness.Reason != coordinator.ReasonClockBack || !errors.Is(nr.Last, snowflake.ErrClockRollback) {
					t.Fatalf("Next with the clock 300ms behind and a short context: %v; want a *NotReadyError, clock_back", err)
				}
				t.Logf("short wait: %v", err)
			}
			take(2000) // each above every ID before the step: take checks
			if ms, c := decode(t, last).UnixMs, l.Status().CeilingMs; ms > c {
				t.Fatalf("an ID at %d ms above the confirmed ceiling %d", ms, c)
			}
			if st := l.Status(); policy == snowflake.Logical && st.LogicalIssued == 0 {
				t.Fatalf("logical: no ID issued on the logical clock (%+v)", st)
			}
		})
	}
}
