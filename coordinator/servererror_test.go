package coordinator

import (
	"errors"
	"path"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/integration/zktest"
	"github.com/snowfleet/snowfleet/snowflake"
)

// renewErrors is snowflake_coordinator_renew_errors_total{kind}, 0 while
// reg exports no such series.
func renewErrors(t testing.TB, reg prometheus.Gatherer, kind string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "snowflake_coordinator_renew_errors_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" && l.GetValue() == kind {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// setByteQuota puts a hard byte limit of limit on p, as zkCli's setquota -B
// does: the limit node first, then the stats node with what p holds now.
func setByteQuota(t testing.TB, conn *zk.Conn, p string, limit int) {
	t.Helper()
	qp := "/zookeeper/quota" + p
	acl := zk.WorldACL(zk.PermAll)
	dir := "/zookeeper/quota"
	for _, part := range splitPath(p) {
		dir = path.Join(dir, part)
		if _, err := conn.Create(dir, nil, 0, acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatalf("create %s: %v", dir, err)
		}
	}
	limits := []byte("count=-1,bytes=-1,countHardLimit=-1,byteHardLimit=" + itoa(limit))
	if _, err := conn.Create(qp+"/zookeeper_limits", limits, 0, acl); err != nil {
		t.Fatalf("create the quota's limit node: %v", err)
	}
	_, st, err := conn.Get(p)
	if err != nil {
		t.Fatal(err)
	}
	stats := []byte("count=1,bytes=" + itoa(int(st.DataLength)))
	if _, err := conn.Create(qp+"/zookeeper_stats", stats, 0, acl); err != nil {
		t.Fatalf("create the quota's stats node: %v", err)
	}
	data, _, _ := conn.Get(qp + "/zookeeper_stats")
	t.Logf("quota on %s: %s; stats %s", p, limits, data)
}

// clearQuota takes the quota off p (zkCli's delquota).
func clearQuota(t testing.TB, conn *zk.Conn, p string) {
	t.Helper()
	for _, n := range []string{"zookeeper_limits", "zookeeper_stats"} {
		if err := conn.Delete("/zookeeper/quota"+p+"/"+n, -1); err != nil {
			t.Fatalf("delete quota node %s: %v", n, err)
		}
	}
}

func splitPath(p string) []string {
	var out []string
	for p != "/" && p != "" {
		out = append([]string{path.Base(p)}, out...)
		p = path.Dir(p)
	}
	return out
}

// A renew the server answers with an error that is not about our lease
// nor the slot node's ACL — here QUOTAEXCEEDED (-125), which go-zookeeper
// reports as "unknown error", as it does THROTTLEDOP and REQUESTTIMEOUT —
// keeps the lease: the worker serves on up to its confirmed ceiling,
// counts renew_errors_total{kind="server"}, retries at the next renew, and
// renews as before once the error stops. (It used to take such an answer
// for an ACL refusal and drop a healthy lease.)
//
// ZooKeeper checks a byte quota on a SetData only when the data changes
// size, which the slot record does when the millisecond of its times ends
// in 0 (RFC 3339 drops trailing zeros) or stops ending in 0. A renew every
// 203 ms moves that digit on by 3 each time, so about two renews in ten
// are refused and the rest land.
func TestUnknownServerErrorKeepsLease(t *testing.T) {
	zs := zktest.StartWith(t, zktest.Options{SystemProperties: map[string]string{"zookeeper.enforceQuota": "true"}})
	obs := observer(t, zs.Addr())
	rec := newRecorder()
	reg := prometheus.NewRegistry()
	cfg := pinned(testConfig(zs.Addr()), testSlot)
	cfg.Renew = 203 * time.Millisecond
	w := startWorkerWith(t, "W", cfg, rec, reg)
	w.waitReady(10 * time.Second)
	gen := w.c.Generator()
	sp := zklayout.SlotPath(cfg.Root, testSlot)
	setByteQuota(t, obs, sp, 1) // the node holds more already: every change of size is refused

	const want = 3
	waitFor(t, 30*time.Second, "renews refused by the quota, or the lease lost", func() bool {
		return renewErrors(t, reg, "server") >= want || w.losses() > 0
	})
	if n := w.losses(); n > 0 {
		t.Fatalf("lease lost (%v times; refused %v) after the server answered a renew with QUOTAEXCEEDED: want it kept",
			n, counterValue(t, reg, "snowflake_coordinator_lease_losses_total", "reason", "refused"))
	}
	if g := w.c.Generator(); g != gen {
		t.Fatalf("generator replaced after server errors: the lease was not kept")
	}
	if _, err := gen.Next(); errors.Is(err, snowflake.ErrSealed) {
		t.Fatalf("generator after server errors: %v, want it issuing (up to its ceiling)", err)
	}
	if n := renewErrors(t, reg, "failed"); n != 0 {
		t.Fatalf("renew_errors_total{kind=failed} = %v, want 0: a quota is no refusal", n)
	}

	// The quota goes: the errors stop and the holder renews as before.
	clearQuota(t, obs, sp)
	before, _ := readSlot(t, obs, cfg.Root, testSlot)
	errs := renewErrors(t, reg, "server")
	waitFor(t, 10*time.Second, "five renews landed after the quota went", func() bool {
		r, _ := readSlot(t, obs, cfg.Root, testSlot)
		return r.Version >= before.Version+5
	})
	if n := renewErrors(t, reg, "server"); n > errs+1 { // one may have been on its way
		t.Fatalf("server errors went on after the quota went: %v, then %v", errs, n)
	}
	if w.losses() != 0 || w.c.Generator() != gen || !w.c.Ready() {
		t.Fatalf("after the quota went: losses %v, same generator %v, ready %v; want the same lease serving",
			w.losses(), w.c.Generator() == gen, w.c.Ready())
	}
	w.Stop()
	rec.checkDisjoint(t)
}
