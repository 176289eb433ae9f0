package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/snowflake"
	"github.com/snowfleet/snowfleet/snowflake/configerr"
)

// A worker claims a slot, writes the layout and a human-readable slot node,
// serves IDs of its slot, and on stop lowers the reservation to its last
// issued timestamp and deletes its lease node.
func TestClaimServeRelease(t *testing.T) {
	zs := startZK(t)
	rec := newRecorder()
	cfg := testConfig(zs.Addr())
	cfg.Advertise, cfg.HTTPAdvertise, cfg.Version = "10.0.0.1:7609", "10.0.0.1:7610", "test"
	w := startWorker(t, "w1", cfg, rec)
	w.waitReady(10 * time.Second)
	st := w.c.Status()
	if st.State != StateServing || st.Slot == "" || st.LeaseNode == "" || st.SessionID == 0 {
		t.Fatalf("status while serving: %+v", st)
	}
	slot, err := snowflake.ParseSlot(st.Slot)
	if err != nil {
		t.Fatal(err)
	}
	obs := observer(t, zs.Addr())
	data, _, err := obs.Get(cfg.Root)
	if err != nil {
		t.Fatal(err)
	}
	var info tree.RootInfo
	if err := json.Unmarshal(data, &info); err != nil || info.Compatible() != nil {
		t.Fatalf("root JSON %s: %v %v", data, err, info.Compatible())
	}
	m, err := tree.ReadSlotMap(obs, cfg.Root)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Leases) != 1 || m.Leases[0].Slot != slot || m.Leases[0].Addr != cfg.Advertise ||
		m.Leases[0].HTTP != cfg.HTTPAdvertise || m.Leases[0].Version != "test" || m.Leases[0].PID == 0 {
		t.Fatalf("slot map leases: %+v", m.Leases)
	}
	// Ahead of what the record says was issued, not of the clock: on a
	// loaded machine (make test, -race) the test read it after the
	// reservation's end and before the renewal that moves it on.
	if r := m.Slots[slot]; r.Holder != st.LeaseNode || r.ReservedUntilMs <= r.LastMs {
		t.Fatalf("slot record %+v, want holder %s and a reservation ahead", r, st.LeaseNode)
	}
	raw, _, _ := obs.Get(zklayout.SlotPath(cfg.Root, slot))
	if !strings.Contains(string(raw), "\"reserved_until_ms\"") || !strings.Contains(string(raw), "\n") {
		t.Fatalf("slot node is not readable JSON: %s", raw)
	}
	// IDs carry the slot, and the ceiling follows the renewals.
	g := w.c.Generator()
	id, err := g.Next()
	if err != nil {
		t.Fatal(err)
	}
	f, _ := snowflake.Decode(id)
	if f.Slot() != slot {
		t.Fatalf("ID of slot %s from a lease of %s", f.Slot(), slot)
	}
	c0 := g.Ceiling()
	waitFor(t, 5*time.Second, "ceiling raised by renewals", func() bool { return g.Ceiling() > c0 })

	w.Stop()
	last := g.LastMs()
	if _, err := g.Next(); !errors.Is(err, snowflake.ErrSealed) {
		t.Fatalf("generator after release: %v, want sealed", err)
	}
	r, _ := readSlot(t, obs, cfg.Root, slot)
	if r.ReservedUntilMs != last {
		t.Fatalf("released reservation %d, want the last issued %d", r.ReservedUntilMs, last)
	}
	if names, _, _ := obs.Children(zklayout.LeasesPath(cfg.Root)); len(names) != 0 {
		t.Fatalf("lease nodes left after release: %v", names)
	}
	if st := w.c.Status(); st.State != StateStopped {
		t.Fatalf("state after stop: %s", st.State)
	}
	rec.checkDisjoint(t)
}

// 32 workers pinned to one datacenter fill it; a 33rd stands by (not
// ready), then takes the first slot released, and starts above everything
// its predecessor issued.
func TestDatacenterFullStandbyTakeover(t *testing.T) {
	zs := startZK(t)
	rec := newRecorder()
	cfg := testConfig(zs.Addr())
	cfg.Renew = 300 * time.Millisecond
	cfg.Datacenter = 7
	var ws []*worker
	for i := 0; i < 32; i++ {
		ws = append(ws, startWorker(t, "dc7-"+itoa(i), cfg, rec))
	}
	for _, w := range ws {
		w.waitReady(20 * time.Second)
	}
	seen := map[string]string{}
	for _, w := range ws {
		st := w.c.Status()
		if !strings.HasPrefix(st.Slot, "dc07-") {
			t.Fatalf("%s holds %s outside datacenter 7", w.name, st.Slot)
		}
		if other, ok := seen[st.Slot]; ok {
			t.Fatalf("%s and %s both hold %s", other, w.name, st.Slot)
		}
		seen[st.Slot] = w.name
	}
	extra := startWorker(t, "dc7-extra", cfg, rec)
	waitFor(t, 10*time.Second, "33rd worker standing by", func() bool { return extra.c.Status().State == StateStandby })
	time.Sleep(500 * time.Millisecond)
	if extra.c.Ready() || extra.c.Generator() != nil {
		t.Fatal("standby worker is ready")
	}
	victim := ws[13]
	slot := victim.c.Status().Slot
	victim.Stop()
	waitFor(t, 10*time.Second, "standby takes the released slot", extra.c.Ready)
	if got := extra.c.Status().Slot; got != slot {
		t.Fatalf("standby took %s, want the released %s", got, slot)
	}
	// Let it issue, then check that no interval overlaps.
	time.Sleep(200 * time.Millisecond)
	s, _ := snowflake.ParseSlot(slot)
	if hs := rec.holdings(s); len(hs) < 2 {
		t.Fatalf("slot %s: %d holders issued, want 2", slot, len(hs))
	}
	rec.checkDisjoint(t)
}

// A root made for another layout is refused: Run fails with
// ErrLayoutMismatch and touches nothing.
func TestRootOfAnotherLayout(t *testing.T) {
	zs := startZK(t)
	obs := observer(t, zs.Addr())
	if _, err := obs.Create("/other", []byte(`{"layout":"someone-else/v9","epoch_ms":0}`), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(zs.Addr())
	cfg.Root = "/other"
	c, err := New(cfg, testLogger(t, "w"), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Run(ctx); !errors.Is(err, tree.ErrLayoutMismatch) {
		t.Fatalf("Run on a foreign root: %v, want ErrLayoutMismatch", err)
	}
	if ok, _, _ := obs.Exists("/other/leases"); ok {
		t.Fatal("a foreign root was written to")
	}
}

func TestConfigValidate(t *testing.T) {
	if err := insecureDefault().Validate(); err != nil {
		t.Fatalf("default config, insecure: %v", err)
	}
	// Secure by default: no credentials is refused unless Insecure says so.
	var ce *configerr.Error
	if err := DefaultConfig().Validate(); !errors.As(err, &ce) || ce.Field != "Insecure" {
		t.Fatalf("default config without Auth: %v, want a ConfigError on Insecure", err)
	}
	withAuth := DefaultConfig()
	withAuth.Auth = "worker:pw"
	if err := withAuth.Validate(); err != nil {
		t.Fatalf("default config with Auth: %v", err)
	}
	for name, mod := range map[string]func(*Config){
		"Servers":        func(c *Config) { c.Servers = nil },
		"Root":           func(c *Config) { c.Root = "snowflake" },
		"Datacenter":     func(c *Config) { c.Datacenter = 32 },
		"SessionTimeout": func(c *Config) { c.SessionTimeout = time.Millisecond },
		"Horizon":        func(c *Config) { c.Horizon = c.Renew },
		"Auth":           func(c *Config) { c.Auth = "nopassword" },
		"SequenceStart":  func(c *Config) { c.SequenceStart = 5 },
	} {
		cfg := insecureDefault()
		mod(&cfg)
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: Validate() = %v, want an error naming the field", name, err)
		}
	}
	// A horizon longer than the session timeout is legitimate.
	cfg := insecureDefault()
	cfg.Horizon = 30 * time.Second
	if err := cfg.Validate(); err != nil {
		t.Errorf("long horizon: %v", err)
	}
}

// A registry that has the coordinator's metrics already is a caller's
// mistake to report, not a panic.
func TestMetricsRegisteredTwice(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := New(insecureDefault(), nil, reg); err != nil {
		t.Fatalf("first coordinator: %v", err)
	}
	_, err := New(insecureDefault(), nil, reg)
	if err == nil || !strings.Contains(err.Error(), "register metrics") {
		t.Fatalf("second coordinator on the same registry: %v, want a register metrics error", err)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
