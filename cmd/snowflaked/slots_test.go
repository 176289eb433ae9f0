package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zkconn"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/integration/testenv"
	"github.com/snowfleet/snowfleet/integration/zktest"
	"github.com/snowfleet/snowfleet/snowflake"
)

// chromium runs Debian's chromium headless on url with extra flags and
// returns its stdout.
func chromium(t *testing.T, url string, flags ...string) string {
	t.Helper()
	testenv.Require(t, "chromium")
	bin := "chromium"
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--user-data-dir=" + t.TempDir()}, flags...)
	cmd := exec.Command(bin, append(args, url)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("chromium %v: no exit after 60s\n%s", flags, stderr.String())
	}
	if err != nil {
		t.Fatalf("chromium %v: %v\n%s", flags, err, stderr.String())
	}
	return stdout.String()
}

var cellRE = regexp.MustCompile(`<rect id="(dc\d\d-m\d\d)" class="cell (\w+)"[^>]*><title>([^<]*)</title>`)

// TestSlotsPage renders /slots of a live 3-worker fleet in headless
// Chromium: the DOM has 1,024 cells, exactly the three held slots coloured
// held (their titles naming the holders' addresses), a slot reserved into
// the future drawn as cooling down; the page is saved as a screenshot
// (SNOWFLEET_SCREENSHOT names where: make screenshot); /slots.json agrees;
// a query string still renders; with ZooKeeper gone the page is a banner.
func TestSlotsPage(t *testing.T) {
	bin := build(t)
	zks := zktest.Start(t)
	root := "/slots-page-test"
	// The fleet owns datacenters 3 and 31: the other 960 slots are drawn
	// outside it, and free slots are counted of its 64.
	owned := initFleetRoot(t, zks.Addr(), root, "3,31")
	// A slot node overwritten by hand: drawn damaged, named in a banner,
	// and the rest of the map still drawn.
	damaged := snowflake.Slot{Datacenter: 31, Machine: 29}
	{
		conn, err := zkconn.Dial([]string{zks.Addr()}, "", 5*time.Second, hclog.NewNullLogger())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Set(zklayout.SlotPath(root, damaged), []byte("reserved_until_ms=1"), -1); err != nil {
			t.Fatalf("overwrite %s: %v", damaged, err)
		}
		conn.Close()
	}
	common := []string{"--zk", zks.Addr(), "--zk-root", root,
		"--session-timeout", "4s", "--renew", "200ms", "--horizon", "2s"}
	var ds []*daemonProc
	held := map[string]string{} // slot -> advertised address
	for i := 0; i < 3; i++ {
		// Worker 0, whose page is drawn, is pinned to datacenter 3; the
		// others take any slot of the fleet.
		args := common
		if i == 0 {
			args = append(args, "--datacenter", "3")
		}
		d := startDaemon(t, bin, nil, args...)
		d.waitReady(15 * time.Second)
		st := d.status()
		held[st.Slot] = st.Advertise
		ds = append(ds, d)
	}
	// A slot whose last holder is gone but whose reservation is an hour
	// ahead: a successor would wait it out.
	conn, err := zkconn.Dial([]string{zks.Addr()}, "", 5*time.Second, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cooling := snowflake.Slot{Datacenter: 31, Machine: 31}
	if _, ok := held[cooling.String()]; ok {
		cooling.Machine = 30
	}
	// Within the root's bound (41 s) past now: a reservation further out
	// is one no holder could have written, shown damaged (tree.Forged).
	rec := fmt.Sprintf(`{"reserved_until_ms":%d,"last_ms":%d,"holder":"_c_gone-%s-0000000009","updated_ms":%d}`,
		time.Now().Add(35*time.Second).UnixMilli(), time.Now().UnixMilli(), cooling, time.Now().UnixMilli())
	if _, err := conn.Set(zklayout.SlotPath(root, cooling), []byte(rec), -1); err != nil {
		t.Fatalf("set %s: %v", cooling, err)
	}

	fleetDCs := map[int]bool{}
	for dc := 0; dc < 32; dc++ {
		fleetDCs[dc] = owned.Has(dc)
	}
	for sl := range held {
		if s, _ := snowflake.ParseSlot(sl); !owned.Has(s.Datacenter) {
			t.Errorf("slot %s is held outside the fleet's datacenters %s", sl, owned)
		}
	}
	outside := (32 - owned.Len()) * 32
	free := 1024 - 5 - outside

	url := "http://127.0.0.1:" + ds[0].http + "/slots?refresh=1&x=%3Cscript%3E"
	dom := chromium(t, url, "--dump-dom")
	cells := cellRE.FindAllStringSubmatch(dom, -1)
	if len(cells) != 1024 {
		t.Fatalf("DOM has %d cells, want 1024:\n%.2000s", len(cells), dom)
	}
	gotHeld := map[string]bool{}
	states := map[string]int{}
	for _, c := range cells {
		states[c[2]]++
		switch c[2] {
		case tree.SlotHeld:
			gotHeld[c[1]] = true
			if addr := held[c[1]]; addr == "" || !strings.Contains(c[3], "address: "+addr) || !strings.Contains(c[3], "held since: ") {
				t.Errorf("held cell %s: title %q, want the address %q", c[1], c[3], addr)
			}
		case tree.SlotDamaged:
			if c[1] != damaged.String() || !strings.Contains(c[3], "damage: decode slot node") {
				t.Errorf("damaged cell %s: %q", c[1], c[3])
			}
		case tree.SlotReserved:
			if c[1] != cooling.String() || !strings.Contains(c[3], "reserved until: ") || !strings.Contains(c[3], "last holder: _c_gone") {
				t.Errorf("reserved cell %s: %q", c[1], c[3])
			}
		}
	}
	if len(gotHeld) != len(held) {
		t.Errorf("held cells %v, want exactly %v", keys(gotHeld), held)
	}
	for s := range held {
		if !gotHeld[s] {
			t.Errorf("slot %s is held but its cell is not", s)
		}
	}
	if states[tree.SlotReserved] != 1 || states[tree.SlotDamaged] != 1 || states[tree.SlotFree] != free || states[tree.SlotOutside] != outside {
		t.Errorf("cell states %v, want 3 held, 1 reserved, 1 damaged, %d free, %d outside", states, free, outside)
	}
	for _, c := range cells {
		s, _ := snowflake.ParseSlot(c[1])
		if (c[2] == tree.SlotOutside) == fleetDCs[s.Datacenter] {
			t.Errorf("cell %s is %s; fleet datacenters %v", c[1], c[2], fleetDCs)
		}
	}
	if !strings.Contains(dom, fmt.Sprintf("held 3, reserved (cooling down) 1, free %d, outside %d, damaged 1 of 1024 slots", free, outside)) ||
		!strings.Contains(dom, `id="legend"`) || strings.Contains(dom, `id="error"`) ||
		!regexp.MustCompile(`id="damaged"[^>]*>[^<]*`+damaged.String()).MatchString(dom) {
		t.Errorf("count line, legend or banner wrong:\n%.3000s", dom)
	}

	shot := os.Getenv("SNOWFLEET_SCREENSHOT")
	if shot == "" {
		shot = filepath.Join(t.TempDir(), "slots.png")
	}
	chromium(t, url, "--screenshot="+shot, "--window-size=680,820")
	png, err := os.ReadFile(shot)
	if err != nil || len(png) < 1000 || !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("screenshot %s: %d bytes, %v", shot, len(png), err)
	}
	t.Logf("screenshot: %s (%d bytes)", shot, len(png))

	// /slots.json: the same data.
	code, body := ds[0].get("/slots.json?pretty=no")
	var v tree.SlotMapView
	if err := json.Unmarshal([]byte(body), &v); code != 200 || err != nil {
		t.Fatalf("/slots.json = %d: %v\n%.500s", code, err, body)
	}
	if v.Error != "" || len(v.Slots) != 1024 || v.Counts[tree.SlotHeld] != 3 || v.Root != root {
		t.Fatalf("/slots.json: error %q, %d slots, counts %v, root %q", v.Error, len(v.Slots), v.Counts, v.Root)
	}
	for _, s := range v.Slots {
		if (s.State == tree.SlotHeld) != (held[s.Slot] != "") || s.State == tree.SlotHeld && (s.Addr != held[s.Slot] || s.HeldSince == nil) {
			t.Errorf("/slots.json slot %+v", s)
		}
		if (s.State == tree.SlotDamaged) != (s.Slot == damaged.String()) || s.State == tree.SlotDamaged && s.Damage == "" {
			t.Errorf("/slots.json slot %+v; the damaged one is %s", s, damaged)
		}
	}

	// ZooKeeper gone: a banner, status 200, no cells.
	zks.Stop()
	code, body = ds[2].get("/slots?x")
	if code != 200 || !strings.Contains(body, `class="banner"`) || !strings.Contains(body, "Slot map unavailable") || strings.Contains(body, "<rect") {
		t.Fatalf("/slots without ZooKeeper = %d:\n%.1500s", code, body)
	}
	code, body = ds[2].get("/slots.json")
	v = tree.SlotMapView{}
	if err := json.Unmarshal([]byte(body), &v); code != 200 || err != nil || v.Error == "" || len(v.Slots) != 0 {
		t.Fatalf("/slots.json without ZooKeeper = %d %q", code, body)
	}
	t.Logf("without ZooKeeper: %s", v.Error)
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
