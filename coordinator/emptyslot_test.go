package coordinator

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
)

// Every record without a valid reservation is damage: none reads as floor 0.
func TestDecodeSlotWithoutReservation(t *testing.T) {
	for _, data := range []string{"", "  \n", "{}", "null", `{"last_ms": 1700000000000, "holder": "x"}`,
		`{"reserved_until_ms": 0}`, `{"reserved_until_ms": 5}`, `{"reserved_until_ms": -1}`,
		`{"reserved_until_ms": 99999999999999999}`} {
		rec, err := tree.DecodeSlot([]byte(data))
		if !errors.Is(err, tree.ErrNoReservation) {
			t.Errorf("tree.DecodeSlot(%q) = %+v, %v; want ErrNoReservation", data, rec, err)
		}
	}
	rec, err := tree.DecodeSlot([]byte(`{"reserved_until_ms": 1700000000000, "last_ms": 1699999999000}`))
	if err != nil || rec.ReservedUntilMs != 1700000000000 || rec.LastMs != 1699999999000 {
		t.Errorf("a valid record: %+v, %v", rec, err)
	}
}

// The hand "fix" of a missing slot node, `zkCli create .../slots/dc03-m04`
// with no data, used to read as floor 0: a successor whose clock ran 2 s
// behind issued IDs its predecessor had issued. Now the slot is avoided,
// logged at error, counted, and shown as damaged; nothing is issued from it.
func TestEmptySlotNodeIsDamage(t *testing.T) {
	zs := startZK(t)
	obs := observer(t, zs.Addr())
	root := zklayout.DefaultRoot
	makeRoot(t, obs, root, zk.WorldACL(zk.PermAll))
	rec := newRecorder()

	a := startWorker(t, "A", pinned(testConfig(zs.Addr()), testSlot), rec)
	a.waitReady(10 * time.Second)
	waitFor(t, 5*time.Second, "A issues", func() bool { return len(rec.holdings(testSlot)) == 1 && rec.holdings(testSlot)[0].n > 200 })
	a.Crash()
	a.Stop()

	for _, data := range []string{"", "{}", "null"} {
		// The operator deletes the node and makes it again by hand.
		if err := obs.Delete(zklayout.SlotPath(root, testSlot), -1); err != nil {
			t.Fatal(err)
		}
		if _, err := obs.Create(zklayout.SlotPath(root, testSlot), []byte(data), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		var log lockedBuffer
		reg := prometheus.NewRegistry()
		clock := &testClock{}
		clock.Shift(-2 * time.Second)
		cfg := pinned(testConfig(zs.Addr()), testSlot)
		cfg.Clock = clock
		b := startWorkerLogged(t, "B", cfg, rec, reg, capturingLogger(t, "B", &log))
		waitFor(t, 5*time.Second, "B avoids the emptied slot", func() bool {
			return counterValue(t, reg, undecodableMetric, "", "") >= 1 && b.c.getState() == StateStandby
		})
		time.Sleep(300 * time.Millisecond)
		if g := b.c.Generator(); g != nil {
			t.Fatalf("data %q: B serves the slot whose node holds no reservation", data)
		}
		if !strings.Contains(log.String(), "[ERROR]") || !strings.Contains(log.String(), "no valid reservation") {
			t.Errorf("data %q: no error log naming the missing reservation:\n%s", data, log.String())
		}
		b.Stop()
		m, err := tree.ReadSlotMap(obs, root)
		if err != nil {
			t.Fatal(err)
		}
		if m.Damaged[testSlot] == "" {
			t.Errorf("data %q: the slot map does not show %s as damaged", data, testSlot)
		}
		if _, ok := m.Slots[testSlot]; ok {
			t.Errorf("data %q: the slot map reads a record for %s", data, testSlot)
		}
	}
	rec.checkDisjoint(t)
	if hs := rec.holdings(testSlot); len(hs) != 1 {
		t.Errorf("%d holders issued from %s, want only A", len(hs), testSlot)
	}
}
