package coordinator

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/snowflake"
)

// lockedBuffer collects a worker's log for the test to search.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func capturingLogger(t testing.TB, name string, buf io.Writer) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: name, Level: hclog.Info, Output: io.MultiWriter(testWriter{t}, buf)})
}

const undecodableMetric = "snowflake_coordinator_slot_undecodable_total"

// A slot node that does not decode (a hand edit in zkCli, say) neither
// wedges a claimer — which used to retry it every 100 ms forever, silently,
// holding its lease node — nor a holder, whose renew used to answer
// "unknown" forever: the slot is avoided, the lease node let go, an error
// logged and the metric counted.
func TestUndecodableSlotNode(t *testing.T) {
	zs := startZK(t)
	obs := observer(t, zs.Addr())
	root := zklayout.DefaultRoot
	acl := zk.WorldACL(zk.PermAll)
	makeRoot(t, obs, root, acl)
	garbage := []byte(`reserved_until_ms=1700000000000`) // not JSON
	if _, err := obs.Set(zklayout.SlotPath(root, testSlot), garbage, -1); err != nil {
		t.Fatal(err)
	}

	// At claim: the only slot the worker may take does not decode.
	var logA lockedBuffer
	regA := prometheus.NewRegistry()
	a := startWorkerLogged(t, "A", pinned(testConfig(zs.Addr()), testSlot), newRecorder(), regA, capturingLogger(t, "A", &logA))
	waitFor(t, 5*time.Second, "claimer lets go of the undecodable slot", func() bool {
		names, _, err := obs.Children(zklayout.LeasesPath(root))
		return err == nil && len(names) == 0 && a.c.getState() == StateStandby
	})
	if v := counterValue(t, regA, undecodableMetric, "", ""); v < 1 {
		t.Errorf("%s = %v after an undecodable slot at claim", undecodableMetric, v)
	}
	if !strings.Contains(logA.String(), "[ERROR]") || !strings.Contains(logA.String(), testSlot.String()) {
		t.Errorf("no error log naming %s:\n%s", testSlot, logA.String())
	}
	if a.c.Generator() != nil {
		t.Fatal("serving an undecodable slot")
	}

	// While holding: an operator overwrites the held slot's node.
	other := snowflake.Slot{Datacenter: 3, Machine: 5}
	var logB lockedBuffer
	regB := prometheus.NewRegistry()
	rec := newRecorder()
	b := startWorkerLogged(t, "B", pinned(testConfig(zs.Addr()), other), rec, regB, capturingLogger(t, "B", &logB))
	b.waitReady(10 * time.Second)
	g := b.c.Generator()
	node := b.c.Status().LeaseNode
	if _, err := obs.Set(zklayout.SlotPath(root, other), garbage, -1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "holder gives up the slot whose node no longer decodes", func() bool { return b.losses() >= 1 })
	if _, err := g.Next(); !errors.Is(err, snowflake.ErrSealed) {
		t.Fatalf("generator after the slot node was overwritten: %v, want sealed", err)
	}
	waitFor(t, 5*time.Second, "its lease node deleted", func() bool {
		ok, _, err := obs.Exists(zklayout.LeasesPath(root) + "/" + node)
		return err == nil && !ok
	})
	if v := counterValue(t, regB, undecodableMetric, "", ""); v < 1 {
		t.Errorf("%s = %v after the held slot's node was overwritten", undecodableMetric, v)
	}
	if !strings.Contains(logB.String(), "[ERROR]") || !strings.Contains(logB.String(), other.String()) {
		t.Errorf("no error log naming %s:\n%s", other, logB.String())
	}
	rec.checkDisjoint(t)

	// The map still reads, with the two overwritten nodes named as damaged
	// and every other slot node decoded.
	m, err := tree.ReadSlotMap(obs, root)
	if err != nil {
		t.Fatalf("ReadSlotMap with two undecodable slot nodes: %v", err)
	}
	if len(m.Damaged) != 2 || m.Damaged[testSlot] == "" || m.Damaged[other] == "" {
		t.Errorf("damaged slots %v, want exactly %s and %s", m.Damaged, testSlot, other)
	}
	if len(m.Slots) != snowflake.Slots-2 {
		t.Errorf("%d slot records read, want %d", len(m.Slots), snowflake.Slots-2)
	}
}
