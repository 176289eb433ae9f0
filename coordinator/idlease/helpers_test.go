package idlease

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zkconn"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/snowflake"
)

// testDC is the one datacenter the tests' roots own: 32 slots, of which
// block leaves the ones a test wants claimable.
const testDC = 5

// testConfig is a fast embedded lease: session 2s, renew 200ms, horizon 1s.
func testConfig(root string, servers ...string) Config {
	cfg := DefaultConfig()
	cfg.Servers, cfg.Root, cfg.Program = servers, root, "idlease-test"
	cfg.Insecure = true // the test ZooKeeper has no credentials
	cfg.SessionTimeout = 2 * time.Second
	cfg.Renew = 200 * time.Millisecond
	cfg.Horizon = time.Second
	cfg.MaxReservationWait = 5 * time.Second
	cfg.ReleaseTimeout = time.Second
	cfg.MaxSkew = 500 * time.Millisecond
	return cfg
}

func testLogger(t testing.TB, name string) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: name, Level: hclog.Info, Output: testWriter{t}})
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) { w.t.Logf("%s", p); return len(p), nil }

// dial is an observer's session on addr.
func dial(t testing.TB, addr string) *zk.Conn {
	t.Helper()
	conn, err := zkconn.Dial([]string{addr}, "", 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn
}

// initRoot makes root as snowflakectl init --new-fleet --datacenters 5
// does.
func initRoot(t testing.TB, conn *zk.Conn, root string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ic := tree.DefaultInitConfig()
	ic.Root, ic.NewFleet, ic.Owned = root, true, tree.DCSet(1)<<testDC
	if _, err := tree.InitRoot(ctx, conn, ic); err != nil {
		t.Fatalf("init %s: %v", root, err)
	}
}

// block makes the other 31 slots of testDC look held (an ephemeral lease
// node each on conn's session), so that every claim takes machine m.
func block(t testing.TB, conn *zk.Conn, root string, m int) {
	t.Helper()
	for mc := 0; mc <= snowflake.MaxMachine; mc++ {
		if mc == m {
			continue
		}
		s := snowflake.Slot{Datacenter: testDC, Machine: mc}
		name := fmt.Sprintf("%s/_c_%032d-%s-", zklayout.LeasesPath(root), mc, s)
		if _, err := conn.Create(name, []byte(`{"kind":"worker"}`), zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
}

// openLease is Open bounded by 30s, closed at the test's end.
func openLease(t testing.TB, cfg Config, name string) *Lease {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := Open(ctx, cfg, testLogger(t, name), nil)
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// waitFor polls cond until it holds or within passes (then fails the
// test): a bound against hanging, not a timing assertion.
func waitFor(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// slotRecord reads slot s's node.
func slotRecord(t testing.TB, conn *zk.Conn, root string, s snowflake.Slot) tree.SlotRecord {
	t.Helper()
	m, err := tree.ReadSlotMap(conn, root)
	if err != nil {
		t.Fatal(err)
	}
	return m.Slots[s]
}

func decode(t testing.TB, id int64) snowflake.Fields {
	t.Helper()
	f, err := snowflake.Decode(id)
	if err != nil {
		t.Fatalf("decode %d: %v", id, err)
	}
	return f
}

// only is name's one series in reg (nil: absent, or not one).
func only(t testing.TB, reg prometheus.Gatherer, name string) *dto.Metric {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0]
		}
	}
	return nil
}

// gauge is the value of an unlabelled gauge in reg (-1 when absent).
func gauge(t testing.TB, reg prometheus.Gatherer, name string) float64 {
	t.Helper()
	if m := only(t, reg, name); m != nil {
		return m.GetGauge().GetValue()
	}
	return -1
}

// labels returns the labels of name's one series in reg (nil: not one).
func labels(t testing.TB, reg prometheus.Gatherer, name string) map[string]string {
	t.Helper()
	m := only(t, reg, name)
	if m == nil {
		return nil
	}
	out := map[string]string{}
	for _, lp := range m.GetLabel() {
		out[lp.GetName()] = lp.GetValue()
	}
	return out
}
