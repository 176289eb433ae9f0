package coordinator

import (
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/hashicorp/go-hclog"
	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/integration/faultproxy"
	"github.com/snowfleet/snowfleet/snowflake"
)

// standbyConfig: renew 200ms, horizon 4s, standby horizon 1s (and so a
// clock lead of 1s at most), session 2s.
func standbyConfig(servers ...string) Config {
	cfg := testConfig(servers...)
	cfg.Horizon = 4 * time.Second
	cfg.StandbyHorizon = time.Second
	cfg.MaxClockLead = time.Second
	cfg.MaxReservationWait = 10 * time.Second
	return cfg
}

// ahead is how far the slot's stored reservation is past the clock.
func ahead(t *testing.T, conn *zk.Conn, root string, s snowflake.Slot) time.Duration {
	t.Helper()
	rec, ok := readSlot(t, conn, root, s)
	if !ok {
		t.Fatalf("slot node %s missing", s)
	}
	return time.Duration(rec.ReservedUntilMs-time.Now().UnixMilli()) * time.Millisecond
}

// Without a standby the reservation runs ahead by the horizon; once a
// standby that may take the slot waits, it drops to the standby horizon
// within two renews, the generator's ceiling first; when the standby is
// gone it runs ahead by the horizon again.
func TestStandbyShortensReservation(t *testing.T) {
	zs := startZK(t)
	obs := observer(t, zs.Addr())
	rec := newRecorder()
	cfg := pinned(standbyConfig(zs.Addr()), testSlot)
	a := startWorker(t, "A", cfg, rec)
	a.waitReady(10 * time.Second)
	time.Sleep(3 * cfg.Renew)
	if d := ahead(t, obs, cfg.Root, testSlot); d < cfg.Horizon-cfg.Renew-200*time.Millisecond {
		t.Fatalf("no standby: reservation %v ahead, want about the horizon %v", d, cfg.Horizon)
	}

	b := startWorker(t, "B", cfg, rec) // its only slot is A's: it stands by
	var shown time.Time
	waitFor(t, 10*time.Second, "B's standby node", func() bool {
		names, _, err := obs.Children(tree.StandbyPath(cfg.Root))
		shown = time.Now()
		return err == nil && len(names) == 1
	})
	within := 2*cfg.Renew + 150*time.Millisecond // two renews, and the watch's round trip
	var d time.Duration
	for {
		d = ahead(t, obs, cfg.Root, testSlot)
		if d <= cfg.StandbyHorizon+50*time.Millisecond {
			break
		}
		if time.Since(shown) > within {
			t.Fatalf("reservation still %v ahead %v after the standby appeared, want ≤ standby horizon %v within two renews",
				d, time.Since(shown).Round(time.Millisecond), cfg.StandbyHorizon)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("reservation dropped to %v ahead %v after the standby's node appeared", d, time.Since(shown).Round(time.Millisecond))
	if st := b.c.Status().State; st != StateStandby {
		t.Fatalf("B is %s, want standby", st)
	}
	m, err := tree.ReadSlotMap(obs, cfg.Root)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Standbys) != 1 || m.Standbys[0].Datacenter != -1 || m.Standbys[0].PID == 0 {
		t.Fatalf("slot map standbys %+v, want B's node (any datacenter)", m.Standbys)
	}
	stored, _ := readSlot(t, obs, cfg.Root, testSlot)
	if g := a.c.Generator(); g == nil || g.Ceiling() > stored.ReservedUntilMs {
		t.Fatalf("A's generator ceiling above the stored reservation %d", stored.ReservedUntilMs)
	}
	b.Stop() // the standby goes: its node with its session
	waitFor(t, 5*time.Second, "the reservation back at the horizon", func() bool {
		return ahead(t, obs, cfg.Root, testSlot) > cfg.Horizon-cfg.Renew-200*time.Millisecond
	})
	rec.checkDisjoint(t)
}

// A holder counts only the standbys that could take its slot: one pinned
// to another datacenter leaves its reservation alone, and so does a
// persistent node of its own datacenter; a live one of its own datacenter
// shortens it. (Standby nodes made by hand, as a standby would.)
func TestStandbyOfOtherDatacenterIgnored(t *testing.T) {
	zs := startZK(t)
	obs := observer(t, zs.Addr())
	cfg := pinned(standbyConfig(zs.Addr()), testSlot) // dc03
	a := startWorker(t, "A", cfg, newRecorder())
	a.waitReady(10 * time.Second)
	if err := standbyDir(obs, cfg.Root, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := obs.Create(tree.StandbyPath(cfg.Root)+"/"+tree.StandbyName(tree.NewGUID(), 5, 0x1234), nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * cfg.Renew)
	if d := ahead(t, obs, cfg.Root, testSlot); d < cfg.Horizon-cfg.Renew-200*time.Millisecond {
		t.Fatalf("a standby of dc05 shortened dc03's reservation to %v", d)
	}
	// Nor does a persistent node of dc03 (#36 item 4): no session's end
	// removes it, so one made by anyone able to create in standby/ would
	// shorten the holders of its range for good. Before, it counted.
	if _, err := obs.Create(tree.StandbyPath(cfg.Root)+"/"+tree.StandbyName(tree.NewGUID(), 3, 0x5678), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * cfg.Renew)
	if d := ahead(t, obs, cfg.Root, testSlot); d < cfg.Horizon-cfg.Renew-200*time.Millisecond {
		t.Fatalf("a persistent node in standby/ shortened dc03's reservation to %v", d)
	}
	if _, err := obs.Create(tree.StandbyPath(cfg.Root)+"/"+tree.StandbyName(tree.NewGUID(), 3, 0x1234), nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*cfg.Renew+500*time.Millisecond, "dc03's reservation shortened by a dc03 standby", func() bool {
		return ahead(t, obs, cfg.Root, testSlot) <= cfg.StandbyHorizon+50*time.Millisecond
	})
}

// A crashed holder's slot passes to a waiting standby within about the
// session timeout plus the standby horizon, not the (longer) horizon, and
// the successor starts above everything the crashed holder issued.
func TestStandbyTakesCrashedSlotFast(t *testing.T) {
	zs := startZK(t)
	p := faultproxy.New(t, zs.Addr())
	rec := newRecorder()
	cfg := pinned(standbyConfig(p.Addr()), testSlot)
	cfg.Horizon = 8 * time.Second
	a := startWorker(t, "A", cfg, rec)
	a.waitReady(10 * time.Second)
	cfg.Servers = []string{zs.Addr()}
	b := startWorker(t, "B", cfg, rec)
	waitFor(t, 10*time.Second, "B standing by", func() bool { return b.c.Status().State == StateStandby })
	time.Sleep(3 * cfg.Renew) // A sees B and shortens

	a.Crash()
	p.Blackhole()
	crashed := time.Now()
	bound := cfg.SessionTimeout + cfg.StandbyHorizon + 1500*time.Millisecond
	waitFor(t, bound, "B serving A's slot", func() bool {
		st := b.c.Status()
		return st.Ready && st.Slot == testSlot.String()
	})
	took := time.Since(crashed)
	t.Logf("slot passed to the standby %v after the crash (session %v + standby horizon %v; horizon %v)",
		took.Round(10*time.Millisecond), cfg.SessionTimeout, cfg.StandbyHorizon, cfg.Horizon)
	time.Sleep(200 * time.Millisecond)
	rec.checkDisjoint(t)
}

// A standby whose node cannot be made (standby/ refuses it) logs so and
// stands by all the same, and takes the slot once it is freed.
func TestStandbyNodeRefused(t *testing.T) {
	zs := startZK(t)
	obs := observer(t, zs.Addr())
	cfg := pinned(standbyConfig(zs.Addr()), testSlot)
	a := startWorker(t, "A", cfg, newRecorder())
	a.waitReady(10 * time.Second)
	if err := standbyDir(obs, cfg.Root, zk.WorldACL(zk.PermRead)); err != nil {
		t.Fatal(err)
	}
	var buf lockedBuffer
	log := hclog.New(&hclog.LoggerOptions{Name: "B", Level: hclog.Info, Output: &buf})
	b := startWorkerLogged(t, "B", cfg, nil, nil, log)
	waitFor(t, 10*time.Second, "B standing by", func() bool { return b.c.Status().State == StateStandby })
	waitFor(t, 5*time.Second, "the refusal logged", func() bool {
		return strings.Contains(buf.String(), "cannot create our standby node")
	})
	a.Stop() // released: B takes it although nobody saw it wait
	waitFor(t, 10*time.Second, "B serving", func() bool { return b.c.Ready() })
}

// fullHorizon reports whether slot s is reserved about a full horizon
// ahead, as with no standby waiting.
func fullHorizon(t *testing.T, conn *zk.Conn, cfg Config, s snowflake.Slot) bool {
	return ahead(t, conn, cfg.Root, s) > cfg.Horizon-cfg.Renew-200*time.Millisecond
}

// A standby node of our own session that we do not track (here made
// through the holder's own connection, as a create of ours whose answer
// was lost and that landed later) is deleted on the orphan tick, and does
// not shorten our reservation meanwhile.
func TestStandbyNodeOfOurSessionDeleted(t *testing.T) {
	zs := startZK(t)
	obs := observer(t, zs.Addr())
	cfg := pinned(standbyConfig(zs.Addr()), testSlot)
	a := startWorker(t, "A", cfg, newRecorder())
	a.waitReady(10 * time.Second)
	if err := standbyDir(obs, cfg.Root, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	conn := a.c.conn.Load()
	p := tree.StandbyPath(cfg.Root) + "/" + tree.StandbyName(tree.NewGUID(), -1, conn.SessionID())
	if _, err := conn.Create(p, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * cfg.Renew)
	if !fullHorizon(t, obs, cfg.Config, testSlot) {
		t.Errorf("A shortened its reservation to %v for a standby node of its own", ahead(t, obs, cfg.Root, testSlot))
	}
	waitFor(t, orphanRelist+2*time.Second, "A's own standby node deleted", func() bool {
		ok, _, err := obs.Exists(p)
		return err == nil && !ok
	})
}

// A standby whose delete of its node fails as it takes a slot (standby/
// refuses deletes) leaves the node behind for its session's life; once
// the delete can succeed, the orphan tick deletes it. Meanwhile its own
// node does not shorten its own reservation.
func TestStandbyNodeDeleteFailedThenDeleted(t *testing.T) {
	zs := startZK(t)
	obs := observer(t, zs.Addr())
	cfg := pinned(standbyConfig(zs.Addr()), testSlot)
	rec := newRecorder()
	a := startWorker(t, "A", cfg, rec)
	a.waitReady(10 * time.Second)
	if err := standbyDir(obs, cfg.Root, zk.WorldACL(zk.PermRead|zk.PermCreate|zk.PermAdmin)); err != nil {
		t.Fatal(err)
	}
	b := startWorker(t, "B", cfg, rec)
	waitFor(t, 10*time.Second, "B's standby node", func() bool {
		names, _, err := obs.Children(tree.StandbyPath(cfg.Root))
		return err == nil && len(names) == 1
	})
	a.Stop()
	b.waitReady(10 * time.Second)
	time.Sleep(3 * cfg.Renew)
	names, _, err := obs.Children(tree.StandbyPath(cfg.Root))
	if err != nil || len(names) != 1 {
		t.Fatalf("standby/ holds %q (%v); want B's node, whose delete standby/ refused", names, err)
	}
	if !fullHorizon(t, obs, cfg.Config, testSlot) {
		t.Errorf("B shortened its reservation to %v for its own standby node", ahead(t, obs, cfg.Root, testSlot))
	}
	if _, err := obs.SetACL(tree.StandbyPath(cfg.Root), zk.WorldACL(zk.PermAll), -1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, orphanRelist+2*time.Second, "B's standby node deleted", func() bool {
		names, _, err := obs.Children(tree.StandbyPath(cfg.Root))
		return err == nil && len(names) == 0
	})
	rec.checkDisjoint(t)
}

// A standby that can take nothing although a slot is free (it avoids the
// free one: reserved far past its clock) does not show itself, so the
// holders keep their full horizon; it shows itself once every slot it may
// take is held.
func TestStandbyAvoidingFreeSlotUnseen(t *testing.T) {
	zs := startZK(t)
	obs := observer(t, zs.Addr())
	cfg := pinned(standbyConfig(zs.Addr()), testSlot)
	a := startWorker(t, "A", cfg, newRecorder())
	a.waitReady(10 * time.Second)
	other := snowflake.Slot{Datacenter: 3, Machine: 5}
	now := time.Now().UnixMilli()
	if _, err := obs.Set(zklayout.SlotPath(cfg.Root, other), tree.EncodeSlot(tree.SlotRecord{ReservedUntilMs: now + time.Hour.Milliseconds(), UpdatedMs: now}), -1); err != nil {
		t.Fatal(err)
	}
	b := startWorker(t, "B", pinned(cfg.Config, testSlot, other), nil)
	waitFor(t, 10*time.Second, "B standing by", func() bool { return b.c.Status().State == StateStandby })
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if names, _, _ := obs.Children(tree.StandbyPath(cfg.Root)); len(names) != 0 {
			t.Fatalf("B, which avoids the free slot %s, shows itself: standby/ holds %q", other, names)
		}
		if !fullHorizon(t, obs, cfg.Config, testSlot) {
			t.Fatalf("A shortened its reservation to %v for a standby that can take nothing", ahead(t, obs, cfg.Root, testSlot))
		}
	}
	// Every slot B may take held: it shows itself.
	if _, err := obs.Set(zklayout.SlotPath(cfg.Root, other), tree.EncodeSlot(tree.SlotRecord{ReservedUntilMs: now, UpdatedMs: now}), -1); err != nil {
		t.Fatal(err)
	}
	c := startWorker(t, "C", pinned(cfg.Config, other), nil)
	c.waitReady(15 * time.Second)
	waitFor(t, 15*time.Second, "B's standby node once both slots are held", func() bool {
		names, _, err := obs.Children(tree.StandbyPath(cfg.Root))
		return err == nil && len(names) == 1
	})
}

// Standby node names carry the create's GUID; names without one (builds
// before it) still read, so holders of a mixed fleet count both.
func TestParseStandbyName(t *testing.T) {
	g := "0123456789abcdef0123456789abcdef"
	for _, c := range []struct {
		name string
		dc   int
		guid string
		sid  int64
	}{
		{"_c_" + g + "-dc07-s00000000000000ab", 7, g, 0xab},
		{"_c_" + g + "-any-s0100000ae6700002", -1, g, 0x0100000ae6700002},
		{"dc31-s00000000000000ab", 31, "", 0xab},
		{"any-s0000000000001234", -1, "", 0x1234},
		{tree.StandbyName(g, 3, 0x1234), 3, g, 0x1234},
	} {
		dc, guid, sid, err := tree.ParseStandby(c.name)
		if err != nil || dc != c.dc || guid != c.guid || sid != c.sid {
			t.Errorf("parseStandby(%q) = %d, %q, %x, %v; want %d, %q, %x", c.name, dc, guid, sid, err, c.dc, c.guid, c.sid)
		}
	}
	for _, bad := range []string{"", "dc32-s00", "_c_" + g + "dc07-s00", "_c_short-dc07-s00", "xy-s00", "dc07-sZZ", "dc07"} {
		if _, err := tree.ParseStandbyName(bad); err == nil {
			t.Errorf("ParseStandbyName(%q) accepted", bad)
		}
	}
}
