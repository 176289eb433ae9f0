//go:build integration

package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/snowfleet/snowfleet/integration/zktest"
)

// TestFleetZKTLS runs one scenario of the suite (b, kill -9 a worker) on a
// stack of its own whose workers reach ZooKeeper only over TLS
// (tls-compose.yml: secureClientPort 2281, the certificates made here),
// with the suite's checks: no duplicate, IDs of a slot increasing, the
// lease and ceiling invariants, and recovery within the bound.
func TestFleetZKTLS(t *testing.T) {
	requireDocker(t)
	redis.SetLogger(quietRedis{})
	ctx := context.Background()
	ensureImages(t)

	dir := t.TempDir()
	if _, err := zktest.WriteCerts(dir, "zk1", "zk2", "zk3"); err != nil {
		t.Fatal(err)
	}
	// The containers read the files as users of their own.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Not snowfleet-it-<pid>: TestFleet's reaper leaves this stack alone.
	st := NewStack(t, fmt.Sprintf("snowfleet-ittls-%d", os.Getpid()))
	st.overrides = []string{filepath.Join(st.repo, "integration", "tls-compose.yml")}
	st.env = append(st.env, "SNOWFLEET_TLS_CERTS="+dir)
	t.Cleanup(func() {
		if t.Failed() {
			dumpLogs(ctx, t, st)
		}
		if err := st.Down(ctx); err != nil {
			t.Errorf("tear down %s: %v", st.Project, err)
		}
	})
	if err := st.Up(ctx, 3); err != nil {
		t.Fatalf("stack up: %v", err)
	}
	if _, err := WaitServing(ctx, st, 3, 120*time.Second); err != nil {
		t.Fatalf("stack up over TLS: %v", err)
	}
	col := StartCollector(ctx, st, t.Logf)
	t.Cleanup(col.Stop)
	mon := StartMonitor(ctx, st)
	t.Cleanup(mon.Stop)
	_ = sleep(ctx, 3*time.Second)
	prev := Check(ctx, st, col, mon, time.Now().Add(-time.Second))
	if prev.Duplicates > 0 || len(prev.Problems) > 0 {
		t.Fatalf("before the fault: %d duplicates, problems %v", prev.Duplicates, prev.Problems)
	}
	e := env{ctx: ctx, t: t, st: st, col: col, mon: mon}
	before := col.snap()
	mark := mon.Mark()
	res := killWorker(e)
	if _, err := WaitServing(ctx, st, res.want, recoveryBound+30*time.Second); err != nil {
		t.Errorf("after the heal: %v", err)
	}
	if rec := time.Since(res.fault); rec > recoveryBound+res.outage {
		t.Errorf("served again %v after the fault, bound %v", rec.Round(100*time.Millisecond), recoveryBound+res.outage)
	}
	_ = sleep(ctx, settle)
	v := Check(ctx, st, col, mon, time.Now().Add(-time.Second))
	after := col.snap()
	if d := v.Duplicates - prev.Duplicates; d > 0 {
		t.Errorf("%d duplicate IDs", d)
	}
	if n := len(v.Violations) - len(prev.Violations); n > 0 {
		t.Errorf("IDs of a slot did not increase in a client's order: %v", v.Violations[len(prev.Violations):][:min(5, n)])
	}
	if n := len(v.Bad) - len(prev.Bad); n > 0 {
		t.Errorf("%d IDs outside datacenter %d or not decodable", n, datacenter)
	}
	for _, p := range v.Problems {
		t.Errorf("invariant: %s", p)
	}
	problems, _, zkRounds := mon.Since(mark)
	for _, p := range problems {
		t.Errorf("during the scenario: %s", p)
	}
	if zkRounds < 3 {
		t.Errorf("the monitor listed ZooKeeper only %d times", zkRounds)
	}
	if n := after.ids - before.ids; n == 0 {
		t.Errorf("no IDs collected during the scenario")
	}
	t.Logf("over ZooKeeper TLS: %s; %d IDs checked, recovered in %v", res.note, after.ids-before.ids, time.Since(res.fault).Round(100*time.Millisecond))
}
