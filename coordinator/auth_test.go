package coordinator

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/snowflake"
)

// With digest auth the fleet's credentials may write and the world may only
// read: operators can inspect the slot map but not corrupt it, and a worker
// with the wrong password cannot claim.
func TestDigestAuthAndACLs(t *testing.T) {
	zs := startZK(t)
	rec := newRecorder()
	cfg := testConfig(zs.Addr())
	cfg.Auth = "fleet:s3cret"
	a := startWorker(t, "A", cfg, rec)
	a.waitReady(10 * time.Second)
	st := a.c.Status()
	world := observer(t, zs.Addr())
	m, err := tree.ReadSlotMap(world, cfg.Root)
	if err != nil {
		t.Fatalf("the world cannot read the slot map: %v", err)
	}
	if len(m.Leases) != 1 || m.Leases[0].Node != st.LeaseNode {
		t.Fatalf("world's slot map %+v, want the lease %s", m.Leases, st.LeaseNode)
	}
	slot := m.Leases[0].Slot
	sp := zklayout.SlotPath(cfg.Root, slot)
	if _, err := world.Set(sp, []byte(`{"reserved_until_ms":0}`), -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("world Set on a slot node: %v, want ErrNoAuth", err)
	}
	if _, err := world.Set(cfg.Root, []byte(`{}`), -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("world Set on the root: %v, want ErrNoAuth", err)
	}
	if _, err := world.Create(zklayout.LeasesPath(cfg.Root)+"/dc00-m00-0000000001", nil, 0, zk.WorldACL(zk.PermAll)); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("world Create in leases/: %v, want ErrNoAuth", err)
	}
	if err := world.Delete(zklayout.LeasesPath(cfg.Root)+"/"+st.LeaseNode, -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("world Delete of a lease node: %v, want ErrNoAuth", err)
	}
	acl, _, err := world.GetACL(sp)
	if err != nil {
		t.Fatal(err)
	}
	// ZooKeeper shows the digest as "x" to a reader without ADMIN.
	if len(acl) != 2 || acl[0].Scheme != "digest" || !strings.HasPrefix(acl[0].ID, "fleet:") || acl[0].Perms != zk.PermAll ||
		acl[1] != (zk.ACL{Perms: zk.PermRead, Scheme: "world", ID: "anyone"}) {
		t.Errorf("slot ACL %+v, want fleet all, world read", acl)
	}

	bad := cfg
	bad.Auth = "fleet:wrong"
	c, err := New(bad, testLogger(t, "bad"), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Run(ctx); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("Run with the wrong password: %v, want ErrNoAuth", err)
	}
	rec.checkDisjoint(t)
}

// zklayout.WatchLeases sends the current holders, then a new list on each change;
// the slot map joins them with the slot timelines.
func TestWatchLeases(t *testing.T) {
	zs := startZK(t)
	cfg := testConfig(zs.Addr())
	cfg.Advertise = "w1:7609"
	w1 := startWorker(t, "w1", cfg, nil)
	cfg.Advertise = "w2:7609"
	w2 := startWorker(t, "w2", cfg, nil)
	w1.waitReady(10 * time.Second)
	w2.waitReady(10 * time.Second)
	obs := observer(t, zs.Addr())
	ctx, cancel := context.WithCancel(context.Background())
	ch := zklayout.WatchLeases(ctx, obs, cfg.Root)
	next := func(want int) []zklayout.LeaseInfo {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case l := <-ch:
				if len(l) == want {
					return l
				}
			case <-timeout:
				t.Fatalf("no list of %d leases within 10s", want)
			}
		}
	}
	l := next(2)
	addrs := map[string]bool{l[0].Addr: true, l[1].Addr: true}
	if !addrs["w1:7609"] || !addrs["w2:7609"] {
		t.Fatalf("leases %+v", l)
	}
	w1.Stop()
	l = next(1)
	if l[0].Addr != "w2:7609" {
		t.Fatalf("after w1 left: %+v", l)
	}
	m, err := tree.ReadSlotMap(obs, cfg.Root)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Slots) != snowflake.Slots || m.Slots[l[0].Slot].Holder != l[0].Node {
		t.Fatalf("slot map: %d slots, %s written by %q; want %d slots, written by %s",
			len(m.Slots), l[0].Slot, m.Slots[l[0].Slot].Holder, snowflake.Slots, l[0].Node)
	}
	cancel()
	for range ch { // closed after cancel
	}
}
