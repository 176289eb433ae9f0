package coordinator

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/integration/faultproxy"
)

// logBuffer is a worker's log at Info, kept for a test to read, and
// passed on to the test's own log.
type logBuffer struct {
	t  testing.TB
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.t.Logf("%s", p)
	return l.b.Write(p)
}

// count is how many lines hold s.
func (l *logBuffer) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}

func (l *logBuffer) logger(name string) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: name, Level: hclog.Info, Output: l})
}

// After init (not a new fleet) every slot is reserved past a starting
// worker's clock until the fleet's bound passes: the worker says so once,
// with when it will serve, not once a slot tried (#42 item 3: 1,000 to
// 1,700 lines of "slot is reserved too far past our clock" a start), and
// does not say "every slot is held" while none is.
func TestInitWaitIsLoggedOnce(t *testing.T) {
	zs := startZK(t)
	obs := observer(t, zs.Addr())
	ic := tree.DefaultInitConfig()
	ic.MaxHorizon, ic.MaxSkew = 3*time.Second, 500*time.Millisecond
	initRootT(t, obs, ic)
	cfg := testConfig(zs.Addr())
	cfg.MaxReservationWait = time.Second
	logs := &logBuffer{t: t}
	w := startWorkerBare(t, "W", cfg, newRecorder(), nil, logs.logger("W"))
	// Not ready meanwhile, saying until when (#42 item 4).
	waitFor(t, 10*time.Second, "W waiting for the reservation", func() bool {
		r := w.c.Readiness()
		return r.Reason == ReasonReserved && strings.HasPrefix(r.String(), "reserved_until 20") && r.ReservedUntilMs > r.NowMs
	})
	w.waitReady(20 * time.Second)
	if n := logs.count("slot is reserved too far past our clock"); n != 0 {
		t.Errorf("%d lines of \"slot is reserved too far past our clock\" at Info; want none (one summary)", n)
	}
	if n := logs.count("free slots are reserved past our clock (after snowflakectl init or recover, for the fleet's bound); trying others"); n != 1 {
		t.Errorf("%d lines saying the free slots are reserved past our clock; want 1", n)
	}
	if n := logs.count("no free slot can be claimed yet"); n > 2 {
		t.Errorf("%d lines saying no free slot can be claimed yet; want at most one a situation", n)
	}
	if n := logs.count("every slot is held"); n != 0 {
		t.Errorf("%d lines of \"every slot is held\" while no slot was held", n)
	}
}

// A holder cut off from ZooKeeper says so once, with the ceiling it serves
// up to, and once when a renew is confirmed again (#42 item 3: nothing was
// logged while ZooKeeper was unreachable).
func TestOutageIsLoggedOnceEachWay(t *testing.T) {
	zs := startZK(t)
	p := faultproxy.New(t, zs.Addr())
	cfg := testConfig(p.Addr())
	cfg.SessionTimeout, cfg.Horizon = 4*time.Second, 3*time.Second
	logs := &logBuffer{t: t}
	w := startWorkerLogged(t, "W", cfg, newRecorder(), nil, logs.logger("W"))
	w.waitReady(15 * time.Second)
	p.Blackhole()
	waitFor(t, 10*time.Second, "W out of touch", func() bool { return w.c.getState() == StateDisconnected })
	time.Sleep(5 * cfg.Renew)
	p.Heal()
	waitFor(t, 10*time.Second, "W serving again", func() bool { return w.c.getState() == StateServing })
	if n := logs.count("zookeeper unreachable; serving up to the confirmed ceiling"); n != 1 {
		t.Errorf("%d lines saying ZooKeeper is unreachable; want 1", n)
	}
	if n := logs.count("zookeeper reachable again"); n != 1 {
		t.Errorf("%d lines saying ZooKeeper is back; want 1", n)
	}
}

// A worker started before init says root_missing, connected (#42 item 4:
// it said no_lease, state disconnected or connecting, with nothing about
// the root), and serves once init has run.
func TestReadinessSaysRootMissing(t *testing.T) {
	zs := startZK(t)
	cfg := testConfig(zs.Addr())
	w := startWorkerBare(t, "W", cfg, newRecorder(), nil, testLogger(t, "W"))
	waitFor(t, 10*time.Second, "W saying root_missing", func() bool {
		r := w.c.Readiness()
		return r.Reason == ReasonRootMissing && strings.HasPrefix(r.String(), "root_missing (state connecting)")
	})
	initFleet(t, cfg)
	w.waitReady(20 * time.Second)
}
