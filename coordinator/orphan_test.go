package coordinator

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/integration/faultproxy"
)

// A lease create queued during a partition that outlives the session is
// sent by go-zookeeper on the next session, so its node belongs to the live
// session. The claimer recorded it as an orphan when the create timed out;
// it must delete it when it appears (orphans are keyed by GUID, not by
// session), or the slot stays blocked by our own node for as long as the
// new session lives.
func TestOrphanFromResentCreate(t *testing.T) {
	zs := startZK(t)
	p := faultproxy.New(t, zs.Addr())
	obs := observer(t, zs.Addr())
	h := startWorker(t, "H", pinned(testConfig(zs.Addr()), testSlot), nil)
	h.waitReady(10 * time.Second)

	clk := &gateClock{}
	// Three addresses: go-zookeeper then keeps queued calls for the next
	// session instead of failing them.
	cfg := pinned(testConfig(p.Addr(), p.Addr(), p.Addr()), testSlot)
	cfg.Clock = clk
	w := startWorker(t, "W", cfg, nil)
	waitFor(t, 10*time.Second, "W standing by", func() bool { return w.c.getState() == StateStandby })
	clk.shut() // W pauses just before its create...
	h.Stop()   // ...of the slot H frees
	waitFor(t, 10*time.Second, "W about to create", clk.blocked.Load)
	sid := w.c.conn.Load().SessionID()
	p.Blackhole()
	waitFor(t, 5*time.Second, "W's connection lost", func() bool { return zk.State(w.c.zkState.Load()) != zk.StateHasSession })
	clk.open() // the create is queued; its call times out
	time.Sleep(cfg.SessionTimeout + time.Second)
	p.Heal() // the session has expired: the queued create goes out on a new one
	waitFor(t, 10*time.Second, "W on a new session", func() bool {
		s := w.c.conn.Load().SessionID()
		return s != 0 && s != sid
	})
	for deadline := time.Now().Add(10 * time.Second); !w.c.Ready(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			names, _, _ := obs.Children(zklayout.LeasesPath(cfg.Root))
			t.Fatalf("W not serving 10s after the heal (state %s); leases/ holds %q", w.c.getState(), names)
		}
	}
	names, _, err := obs.Children(zklayout.LeasesPath(cfg.Root))
	if err != nil {
		t.Fatal(err)
	}
	if st := w.c.Status(); len(names) != 1 || names[0] != st.LeaseNode {
		t.Fatalf("leases/ holds %q, want only W's lease %s", names, st.LeaseNode)
	}
}
