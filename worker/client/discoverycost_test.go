package client

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfleet/snowfleet/coordinator/zkconn"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/integration/zktest"
	"github.com/snowfleet/snowfleet/snowflake"
)

// A change of leases/ costs each client one list and one read of each new
// node (#36 item 7), whatever the number of workers: the client's
// discovery used to read every lease node again on every change (and on
// every 30 s re-list), one read per worker for each worker started or
// stopped. Counted from ZooKeeper's own count of the client's requests.
func TestDiscoveryReadsEachLeaseNodeOnce(t *testing.T) {
	zks := zktest.Start(t)
	maker, err := zkconn.Dial([]string{zks.Addr()}, "", 30*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer maker.Close()
	for _, p := range []string{testRoot, zklayout.LeasesPath(testRoot)} {
		if _, err := maker.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	worker := func(i int) string {
		s := snowflake.SlotAt(i)
		data := zklayout.EncodeLease(zklayout.LeaseData{Addr: fmt.Sprintf("127.0.0.1:%d", 20000+i), Kind: zklayout.KindWorker})
		p, err := maker.CreateProtectedEphemeralSequential(zklayout.LeasePrefix(testRoot, s), data, zk.WorldACL(zk.PermAll))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	const n = 50
	var first string
	for i := range n {
		if p := worker(i); i == 0 {
			first = p
		}
	}
	cfg := DefaultConfig()
	cfg.Servers, cfg.Root, cfg.SessionTimeout = []string{zks.Addr()}, testRoot, 30*time.Second
	c, _ := newTestClient(t, cfg)
	endpoints := func(want int) func() bool {
		return func() bool { return value(c.m.endpoints) == float64(want) }
	}
	waitUntil(t, 20*time.Second, "the client's first discovery", endpoints(n))

	sid := c.zk.SessionID()
	before := zks.Received(t, sid)
	worker(n)
	waitUntil(t, 20*time.Second, "the client seeing the new worker", endpoints(n+1))
	if added := zks.Received(t, sid) - before; added < 2 || added > 3 {
		t.Errorf("a worker added among %d: the client sent ZooKeeper %d requests; want 2 (a list, a read of the new node), 3 with a ping", n, added)
	}
	before = zks.Received(t, sid)
	if err := maker.Delete(first, -1); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 20*time.Second, "the client dropping the worker", endpoints(n))
	if removed := zks.Received(t, sid) - before; removed > 2 {
		t.Errorf("a worker removed among %d: the client sent ZooKeeper %d requests; want 1 (a list), 2 with a ping", n+1, removed)
	}
}

// waitUntil polls cond until it holds, failing the test after within.
func waitUntil(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(within); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%s: not within %v", what, within)
		}
	}
}
