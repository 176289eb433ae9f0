package zklayout

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfleet/snowfleet/coordinator/zkconn"
	"github.com/snowfleet/snowfleet/integration/zktest"
	"github.com/snowfleet/snowfleet/snowflake"
)

// leaseFixture is a real ZooKeeper with a root and its leases/, and a
// session that makes lease nodes in it.
type leaseFixture struct {
	zk   *zktest.Server
	conn *zk.Conn
	root string
}

func newLeaseFixture(t *testing.T) *leaseFixture {
	t.Helper()
	zs := zktest.Start(t)
	conn, err := zkconn.Dial([]string{zs.Addr()}, "", 30*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	f := &leaseFixture{zk: zs, conn: conn, root: "/fleet"}
	for _, p := range []string{f.root, LeasesPath(f.root)} {
		if _, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("create %s: %v", p, err)
		}
	}
	return f
}

// lease makes a lease node of slot s, as a claim does (protected,
// sequential), ephemeral or, as anyone able to create in leases/ could,
// persistent; it returns the node's name.
func (f *leaseFixture) lease(t *testing.T, s snowflake.Slot, addr string, ephemeral bool) string {
	t.Helper()
	data := EncodeLease(LeaseData{Addr: addr, Kind: KindWorker})
	var (
		p   string
		err error
	)
	if ephemeral {
		p, err = f.conn.CreateProtectedEphemeralSequential(LeasePrefix(f.root, s), data, zk.WorldACL(zk.PermAll))
	} else {
		p, err = f.conn.Create(LeasesPath(f.root)+"/_c_"+fmt.Sprintf("%032x", s.Index())+"-"+s.String()+"-", data, zk.FlagSequence, zk.WorldACL(zk.PermAll))
	}
	if err != nil {
		t.Fatalf("create a lease node of %s: %v", s, err)
	}
	return p[len(LeasesPath(f.root))+1:]
}

// next waits for the watcher's next list of want leases.
func next(t *testing.T, ch <-chan []LeaseInfo, want int) []LeaseInfo {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case l, ok := <-ch:
			if !ok {
				t.Fatal("WatchLeases closed its channel")
			}
			if len(l) == want {
				return l
			}
		case <-deadline:
			t.Fatalf("no list of %d leases within 20 s", want)
		}
	}
}

// A change of leases/ costs a watcher one list and a read of each new node,
// whatever the number of leases: a worker started among N used to cost each
// watcher N reads (2N(N+1) requests across a fleet of watching workers).
func TestWatchLeasesReadsEachNodeOnce(t *testing.T) {
	f := newLeaseFixture(t)
	const n = 60
	first := f.lease(t, slotAt(0), "10.0.0.1:7000", true)
	for i := 1; i < n; i++ {
		f.lease(t, slotAt(i), fmt.Sprintf("10.0.0.1:%d", 7000+i), true)
	}
	w, err := zkconn.Dial([]string{f.zk.Addr()}, "", 30*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := WatchLeases(ctx, w, f.root)
	next(t, ch, n)

	before := f.zk.Received(t, w.SessionID())
	f.lease(t, slotAt(n), "10.0.0.2:7609", true)
	next(t, ch, n+1)
	added := f.zk.Received(t, w.SessionID()) - before
	// One list (re-arming the watch) and one read; a ping may fall in.
	if added < 2 || added > 3 {
		t.Errorf("a lease added among %d: the watcher sent %d requests; want 2 (a list and a read of the new node), 3 with a ping", n, added)
	}

	before = f.zk.Received(t, w.SessionID())
	if err := f.conn.Delete(LeasesPath(f.root)+"/"+first, -1); err != nil {
		t.Fatal(err)
	}
	next(t, ch, n)
	if removed := f.zk.Received(t, w.SessionID()) - before; removed > 2 {
		t.Errorf("a lease removed among %d: the watcher sent %d requests; want 1 (a list), 2 with a ping", n+1, removed)
	}
}

// slotAt is the slot of index i (datacenter-major, as Slot.Index).
func slotAt(i int) snowflake.Slot {
	return snowflake.Slot{Datacenter: i / (snowflake.MaxMachine + 1), Machine: i % (snowflake.MaxMachine + 1)}
}

// A persistent node named like a lease holds nothing: no session's end
// removes it and no claim made it. Before, one made with a lower sequence
// than a worker's (by anyone able to create in leases/) took the slot in
// every reader's view and steered clients to its address.
func TestLeasesCountOnlyEphemeralNodes(t *testing.T) {
	f := newLeaseFixture(t)
	s, alone := slotAt(66), slotAt(67)
	f.lease(t, s, "10.6.6.6:7609", false)
	held := f.lease(t, s, "10.0.0.1:7609", true)
	f.lease(t, alone, "10.6.6.7:7609", false)

	check := func(how string, l []LeaseInfo) {
		t.Helper()
		if len(l) != 1 || l[0].Node != held || l[0].Addr != "10.0.0.1:7609" {
			t.Errorf("%s: %+v; want only %s (the ephemeral node) holding %s", how, l, held, s)
		}
	}
	l, err := ReadLeases(f.conn, f.root)
	if err != nil {
		t.Fatal(err)
	}
	check("ReadLeases", l)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	check("WatchLeases", next(t, WatchLeases(ctx, f.conn, f.root), 1))
}
