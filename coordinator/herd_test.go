package coordinator

import (
	"testing"
	"time"
)

// Standbys do not all race for a freed slot: 20 standbys of a full
// datacenter see 3 slots freed one at a time, and their lease creates stay
// near one per freed slot (without the jittered delay each standby creates
// on every freed slot: about 60). make sim measures the same with 100
// standbys among 1,024 holders.
func TestStandbyHerdCreates(t *testing.T) {
	zs := startZK(t)
	cfg := testConfig(zs.Addr())
	cfg.Renew = 300 * time.Millisecond
	cfg.Datacenter = 7
	var hs, ss []*worker
	for i := 0; i < 32; i++ {
		hs = append(hs, startWorker(t, "h"+itoa(i), cfg, nil))
	}
	for _, w := range hs {
		w.waitReady(20 * time.Second)
	}
	for i := 0; i < 20; i++ {
		ss = append(ss, startWorker(t, "s"+itoa(i), cfg, nil))
	}
	for _, w := range ss {
		waitFor(t, 10*time.Second, w.name+" standing by", func() bool { return w.c.Status().State == StateStandby })
	}
	creates := func() (n int64) {
		for _, w := range ss {
			n += w.c.Status().Creates
		}
		return n
	}
	c0 := creates()
	for k := 0; k < 3; k++ {
		victim := hs[5+9*k]
		slot := victim.c.Status().Slot
		victim.Stop()
		waitFor(t, 10*time.Second, "freed slot "+slot+" served again", func() bool {
			for _, w := range ss {
				if w.c.Ready() && w.c.Status().Slot == slot {
					return true
				}
			}
			return false
		})
		time.Sleep(time.Second) // losers, if any, delete their nodes
	}
	if n := creates() - c0; n > 6 {
		t.Fatalf("20 standbys made %d lease creates for 3 freed slots, want at most 2 per slot", n)
	} else {
		t.Logf("20 standbys: %d lease creates for 3 freed slots", n)
	}
}
