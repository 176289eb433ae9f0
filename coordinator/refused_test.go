package coordinator

import (
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/snowfleet/snowfleet/coordinator/zkconn"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/snowflake"
)

// A renew ZooKeeper refuses (ErrNoAuth: an operator changed the slot node's
// ACL from a second session) loses the lease at once — sealed, node deleted
// — and the worker claims a slot it may still write. When every slot it may
// claim refuses it, Run stops with an error saying so.
func TestRefusedRenew(t *testing.T) {
	zs := startZK(t)
	rec := newRecorder()
	cfg := testConfig(zs.Addr())
	cfg.Auth = "fleet:s3cret"
	other := snowflake.Slot{Datacenter: 3, Machine: 5}
	w := startWorker(t, "W", pinned(cfg, testSlot, other), rec)
	w.waitReady(10 * time.Second)
	first := w.c.Status()
	gen := w.c.Generator()
	admin, err := zkconn.Dial([]string{zs.Addr()}, cfg.Auth, 5*time.Second, nil) // the operator's own session
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admin.Close)
	lockOut := func(p string) {
		t.Helper()
		acl := append(zk.DigestACL(zk.PermAll, "someone", "else"), zk.WorldACL(zk.PermRead)...)
		if _, err := admin.SetACL(p, acl, -1); err != nil {
			t.Fatalf("set ACL of %s: %v", p, err)
		}
	}
	s1, _ := snowflake.ParseSlot(first.Slot)
	lockOut(zklayout.SlotPath(cfg.Root, s1))
	waitFor(t, 5*time.Second, "lease lost after its renew was refused", func() bool { return w.losses() >= 1 })
	if _, err := gen.Next(); !errors.Is(err, snowflake.ErrSealed) {
		t.Fatalf("generator after the refused renew: %v, want sealed", err)
	}
	waitFor(t, 10*time.Second, "serving the other slot", func() bool {
		st := w.c.Status()
		return st.Ready && st.Slot != first.Slot
	})
	if ok, _, _ := admin.Exists(zklayout.LeasesPath(cfg.Root) + "/" + first.LeaseNode); ok {
		t.Fatalf("lease node %s of the refused slot is still there", first.LeaseNode)
	}

	// Now the other slot refuses too: nothing left to claim.
	s2, _ := snowflake.ParseSlot(w.c.Status().Slot)
	lockOut(zklayout.SlotPath(cfg.Root, s2))
	w.issuing.Store(false)
	w.issuerWG.Wait()
	select {
	case err := <-w.done:
		if !errors.Is(err, ErrSlotsRefused) || !errors.Is(err, zk.ErrNoAuth) {
			t.Fatalf("Run: %v, want ErrSlotsRefused wrapping ErrNoAuth", err)
		}
		t.Logf("Run stopped: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatalf("Run still going 10s after every slot refused it (state %s)", w.c.getState())
	}
	w.stopOnce.Do(func() {}) // Run has returned
	rec.checkDisjoint(t)
}
