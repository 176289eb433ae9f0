package tree

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfleet/snowfleet/coordinator/zkconn"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/integration/zktest"
	"github.com/snowfleet/snowfleet/snowflake"
)

// dial opens a session on the ZooKeeper at addr with credentials auth
// ("" for none), closed with the test.
func dial(t *testing.T, addr, auth string) *zk.Conn {
	t.Helper()
	conn, err := zkconn.Dial([]string{addr}, auth, 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn
}

// rootInfo reads the root's JSON.
func rootInfo(t *testing.T, conn *zk.Conn, root string) RootInfo {
	t.Helper()
	data, _, err := conn.Get(root)
	if err != nil {
		t.Fatal(err)
	}
	info, err := DecodeRoot(root, data)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// recover writes its marker last (#37 item 1): a worker waiting for recover
// claims as soon as it sees the marker, so a slot not raised yet would be
// claimed from the restored tree while a holder cut off during the restore
// still serves it on its ceiling. A recover that stops part-way (here: one
// slot node it may not read) leaves no marker, the slots it reached raised,
// and completes when run again. Before, the marker was written first.
func TestRecoverWritesMarkerLast(t *testing.T) {
	zs := zktest.Start(t)
	op := dial(t, zs.Addr(), "")
	const root = "/restored"
	ic := DefaultInitConfig()
	ic.Root, ic.NewFleet = root, true
	if _, err := InitRoot(context.Background(), op, ic); err != nil {
		t.Fatal(err)
	}
	first, last := snowflake.SlotAt(0), snowflake.SlotAt(snowflake.Slots-1)
	stranger := dial(t, zs.Addr(), "stranger:pw")
	lastPath := zklayout.SlotPath(root, last)
	if _, err := stranger.SetACL(lastPath, ACL("stranger:pw"), -1); err != nil {
		t.Fatal(err)
	}

	res, err := RecoverRoot(context.Background(), op, root, FleetACL{})
	if !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("recover with %s unreadable: %+v, %v; want it to stop there (ErrNoAuth)", last, res, err)
	}
	if info := rootInfo(t, op, root); info.Recovery != "" || res.Marker != "" {
		t.Fatalf("recover stopped part-way, yet the root carries marker %q (result %q): a waiting worker would claim %s unraised",
			info.Recovery, res.Marker, last)
	}
	if rec := slotRecord(t, op, root, first); rec.ReservedUntilMs < res.ReservedUntilMs {
		t.Fatalf("%s reserved until %d; recover raised it to at least %d before it stopped", first, rec.ReservedUntilMs, res.ReservedUntilMs)
	}

	if _, err := stranger.SetACL(lastPath, zk.WorldACL(zk.PermAll), -1); err != nil {
		t.Fatal(err)
	}
	res, err = RecoverRoot(context.Background(), op, root, FleetACL{})
	if err != nil || res.Marker == "" || res.Raised+res.Kept != snowflake.Slots {
		t.Fatalf("recover run again: %+v, %v; want every slot raised or kept, and a marker", res, err)
	}
	if info := rootInfo(t, op, root); info.Recovery != res.Marker {
		t.Fatalf("root's marker %q; recover says it wrote %q", info.Recovery, res.Marker)
	}
	for _, s := range []snowflake.Slot{first, last} {
		if rec := slotRecord(t, op, root, s); rec.ReservedUntilMs < res.ReservedUntilMs {
			t.Fatalf("%s reserved until %d after recover, below %d", s, rec.ReservedUntilMs, res.ReservedUntilMs)
		}
	}
}

// slotRecord reads slot s's node.
func slotRecord(t *testing.T, conn *zk.Conn, root string, s snowflake.Slot) SlotRecord {
	t.Helper()
	data, _, err := conn.Get(zklayout.SlotPath(root, s))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := DecodeSlot(data)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}
