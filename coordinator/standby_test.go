package coordinator

import (
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/hashicorp/go-hclog"
	"github.com/snowfleet/snowfleet/coordinator/zktest"
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
		names, _, err := obs.Children(StandbyPath(cfg.Root))
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
	m, err := ReadSlotMap(obs, cfg.Root)
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
// to another datacenter leaves its reservation alone, one of its own
// datacenter shortens it. (Standby nodes made by hand, as a standby would.)
func TestStandbyOfOtherDatacenterIgnored(t *testing.T) {
	zs := startZK(t)
	obs := observer(t, zs.Addr())
	cfg := pinned(standbyConfig(zs.Addr()), testSlot) // dc03
	a := startWorker(t, "A", cfg, newRecorder())
	a.waitReady(10 * time.Second)
	if _, err := obs.Create(StandbyPath(cfg.Root), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := obs.Create(StandbyPath(cfg.Root)+"/"+standbyName(5, 0x1234), nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * cfg.Renew)
	if d := ahead(t, obs, cfg.Root, testSlot); d < cfg.Horizon-cfg.Renew-200*time.Millisecond {
		t.Fatalf("a standby of dc05 shortened dc03's reservation to %v", d)
	}
	if _, err := obs.Create(StandbyPath(cfg.Root)+"/"+standbyName(3, 0x1234), nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
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
	p := zktest.NewProxy(t, zs.Addr())
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
	if _, err := obs.Create(StandbyPath(cfg.Root), nil, 0, zk.WorldACL(zk.PermRead)); err != nil {
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
