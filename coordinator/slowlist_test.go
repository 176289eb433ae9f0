package coordinator

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/integration/faultproxy"
)

// Against a slow ZooKeeper (every answer 2 s late) with a standby waiting,
// the holder's renew cycle still fits the standby horizon: the listing of
// standby/ no longer runs the renew's whole call timeout before it, so
// the ceiling is raised before the clock reaches it. The listing still
// counts, a cycle late at most: the standby leaving is noticed.
//
// Without a bound on the listing a cycle is listing + write, 4 s here,
// while a confirmed reservation lasts 5 s from its send, 3 s from its
// answer: the clock passed the ceiling for about 1 s every cycle.
func TestSlowStandbyListingKeepsCeiling(t *testing.T) {
	zs := startZK(t)
	p := faultproxy.New(t, zs.Addr())
	obs := observer(t, zs.Addr())
	cfg := pinned(testConfig(p.Addr()), testSlot)
	cfg.SessionTimeout = 6 * time.Second // a call may take 3 s
	cfg.Renew = time.Second
	cfg.Horizon = 20 * time.Second
	cfg.StandbyHorizon = 5 * time.Second
	w := startWorker(t, "W", cfg, newRecorder())
	w.waitReady(10 * time.Second)

	standby := tree.StandbyPath(cfg.Root) + "/" + tree.StandbyName(tree.NewGUID(), testSlot.Datacenter, 0x5107)
	if err := standbyDir(obs, cfg.Root, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := obs.Create(standby, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the reservation shortened to the standby horizon", func() bool {
		return ahead(t, obs, cfg.Root, testSlot) <= cfg.StandbyHorizon+100*time.Millisecond
	})

	const delay = 2 * time.Second
	p.SetDelay(delay)
	slowed := time.Now()
	start, _ := readSlot(t, obs, cfg.Root, testSlot)
	var passed, polls int
	var first time.Time
	minHeadroom := time.Hour
	for end := time.Now().Add(14 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		r := w.c.Readiness()
		polls++
		if r.Reason == ReasonCeiling {
			if passed == 0 {
				first = time.Now()
			}
			passed++
		}
		if r.CeilingMs > 0 {
			minHeadroom = min(minHeadroom, time.Duration(r.CeilingMs-r.NowMs)*time.Millisecond)
		}
	}
	end, _ := readSlot(t, obs, cfg.Root, testSlot)
	t.Logf("answers %v late for 14 s: %d renews landed, least headroom %v, ceiling passed in %d of %d looks",
		delay, end.Version-start.Version, minHeadroom, passed, polls)
	if passed > 0 {
		t.Fatalf("the clock passed the confirmed ceiling (first %v after the delay began) while listings and renews were slow: the renew cycle exceeds the standby horizon %v",
			first.Sub(slowed).Round(time.Millisecond), cfg.StandbyHorizon)
	}
	if w.losses() != 0 {
		t.Fatalf("lease lost while ZooKeeper was slow")
	}

	// The listing still counts while slow: the standby goes, and the
	// holder reserves its full horizon again.
	if err := obs.Delete(standby, -1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the full horizon again once the standby went", func() bool {
		return ahead(t, obs, cfg.Root, testSlot) > cfg.StandbyHorizon+2*time.Second
	})
	p.SetDelay(0)
}
