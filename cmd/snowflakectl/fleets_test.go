package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zkconn"
	"github.com/snowfleet/snowfleet/integration/zktest"
)

func TestInitFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--datacenters", "5-2"}, `--datacenters: bad datacenter ranges: "5-2": range "5-2" runs backwards`},
		{[]string{"--datacenters", "40"}, `--datacenters: bad datacenter ranges: "40": "40" is not a datacenter ID`},
		{[]string{"--datacenters", ""}, `--datacenters: bad datacenter ranges: empty`},
		{[]string{"--zk-root", "x"}, `--zk-root "x" must be an absolute znode path`},
		{[]string{"--max-horizon", "0s"}, `--max-horizon 0s is out of range (0, 24h]`},
		{[]string{"--max-skew", "-1s"}, `--max-skew -1s is out of range (0, 24h]`},
	} {
		var out, errb bytes.Buffer
		rc := runInit(c.args, &out, &errb)
		if rc != exitUsage || !strings.HasPrefix(errb.String(), "snowflakectl init: "+c.want) || strings.Count(errb.String(), "\n") != 1 {
			t.Errorf("init %q: rc %d, stderr %q; want 2 and one line starting %q", c.args, rc, errb.String(), c.want)
		}
	}
	var out, errb bytes.Buffer
	if rc := runFleets(nil, &out, &errb); rc != exitUsage {
		t.Errorf("fleets without an ensemble: rc %d, want 2", rc)
	}
	if rc := runFleets([]string{"127.0.0.1"}, &out, &errb); rc != exitUsage || !strings.Contains(errb.String(), `"127.0.0.1" is not host:port`) {
		t.Errorf("fleets with a bad ensemble: rc %d, %q", rc, errb.String())
	}
}

// TestInitAndFleets: two regions, each its own ensemble: init makes the
// fleets, refuses an overlap within an ensemble, and fleets finds an
// overlap across ensembles (which init cannot see) and exits 1.
func TestInitAndFleets(t *testing.T) {
	eu, us := zktest.Start(t), zktest.Start(t)
	initRoot := func(zk, root, dcs string) (int, string, string) {
		var out, errb bytes.Buffer
		rc := runInit([]string{"--zk", zk, "--zk-root", root, "--datacenters", dcs}, &out, &errb)
		return rc, out.String(), errb.String()
	}
	if rc, out, errb := initRoot(eu.Addr(), "/snowflake", "0-3"); rc != exitOK || !strings.Contains(out, "owning datacenters 0-3 (128 slots)") {
		t.Fatalf("init eu 0-3: rc %d out %q err %q", rc, out, errb)
	}
	if rc, out, errb := initRoot(us.Addr(), "/snowflake", "4-7"); rc != exitOK {
		t.Fatalf("init us 4-7: rc %d out %q err %q", rc, out, errb)
	}
	// A second fleet in eu overlapping the first: refused, one line naming both.
	rc, _, errb := initRoot(eu.Addr(), "/batch", "3-4")
	if rc != exitFailure || !strings.Contains(errb, "/snowflake") || !strings.Contains(errb, "/batch") || !strings.Contains(errb, "both: 3") {
		t.Fatalf("init eu /batch 3-4: rc %d err %q; want 1 naming both roots and datacenter 3", rc, errb)
	}
	if rc, _, errb := initRoot(eu.Addr(), "/batch", "8"); rc != exitOK {
		t.Fatalf("init eu /batch 8: rc %d err %q", rc, errb)
	}

	fleets := func(args ...string) (int, fleetsReport, string) {
		var out, errb bytes.Buffer
		rc := runFleets(append([]string{"--json"}, args...), &out, &errb)
		var rep fleetsReport
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatalf("fleets --json: %v\n%s", err, out.String())
		}
		return rc, rep, errb.String()
	}
	rc, rep, errs := fleets(eu.Addr(), us.Addr())
	if rc != exitOK || len(rep.Fleets) != 3 || len(rep.Overlaps) != 0 {
		t.Fatalf("fleets eu us: rc %d %+v %s; want 3 fleets, no overlap", rc, rep, errs)
	}
	got := map[string]string{}
	for _, f := range rep.Fleets {
		got[f.Ensemble+f.Root] = f.Datacenters
	}
	if got[eu.Addr()+"/snowflake"] != "0-3" || got[eu.Addr()+"/batch"] != "8" || got[us.Addr()+"/snowflake"] != "4-7" {
		t.Fatalf("fleets: %v", got)
	}

	// A third region opened on datacenter 8 by mistake: its own ensemble
	// cannot see it, fleets over both can.
	if rc, _, errb := initRoot(us.Addr(), "/late", "8-9"); rc != exitOK {
		t.Fatalf("init us /late 8-9: rc %d err %q", rc, errb)
	}
	rc, rep, _ = fleets(eu.Addr(), us.Addr())
	if rc != exitFailure || len(rep.Overlaps) != 1 || !strings.Contains(rep.Overlaps[0], "both own datacenters 8") {
		t.Fatalf("fleets after the overlap: rc %d %+v; want 1 and the overlap on 8", rc, rep)
	}
	var out, errb2 bytes.Buffer
	if rc := runFleets([]string{eu.Addr(), us.Addr()}, &out, &errb2); rc != exitFailure || !strings.Contains(out.String(), "OVERLAP: "+eu.Addr()+"/batch (8) and "+us.Addr()+"/late (8-9)") {
		t.Fatalf("fleets text: rc %d\n%s", rc, out.String())
	}

	// slots counts free slots within the fleet's ranges.
	sl := slotsJSON(t, []string{"--zk", eu.Addr(), "--zk-root", "/snowflake", "--json"})
	if sl.Free != 128 || sl.Owned != 128 || sl.Datacenters != "0-3" {
		t.Fatalf("slots of a 0-3 fleet: free %d owned %d datacenters %q; want 128, 128, 0-3", sl.Free, sl.Owned, sl.Datacenters)
	}
	// An unreachable ensemble is a failure, not an empty list.
	down := zktest.FreeAddr(t)
	if rc, rep, errs := fleets("--timeout", "1s", down); rc != exitFailure || !strings.Contains(errs, "ensemble "+down+": ") || len(rep.Failed) != 1 {
		t.Fatalf("fleets of an unreachable ensemble: rc %d %q", rc, errs)
	}
}

// TestInitReservation: init reserves the slots past the bound it records
// (the make's time + --max-horizon + --max-skew) and says until when;
// --new-fleet reserves to the make's time.
func TestInitReservation(t *testing.T) {
	zs := zktest.Start(t)
	var out, errb bytes.Buffer
	if rc := runInit([]string{"--zk", zs.Addr(), "--zk-root", "/old", "--datacenters", "1", "--max-horizon", "20s", "--max-skew", "2s"}, &out, &errb); rc != exitOK {
		t.Fatalf("init: rc %d: %s", rc, errb.String())
	}
	if !strings.Contains(out.String(), "max horizon 20s + max skew 2s") {
		t.Errorf("init did not say what it reserved: %s", out.String())
	}
	out.Reset()
	if rc := runInit([]string{"--zk", zs.Addr(), "--zk-root", "/new", "--datacenters", "0", "--new-fleet"}, &out, &errb); rc != exitOK {
		t.Fatalf("init --new-fleet: rc %d: %s", rc, errb.String())
	}
	if !strings.Contains(out.String(), "--new-fleet") {
		t.Errorf("init --new-fleet: %s", out.String())
	}
}

// Fleets are registered, not searched for (#36 item 1): a subtree closed
// to everybody but its maker, holding a root that would overlap ours,
// neither stops init nor shows in fleets; fleets reads the registry
// (entries made by init); the deprecated --zk-scan-skip is accepted with a
// warning and still refuses a malformed path.
func TestFleetsFromTheRegistry(t *testing.T) {
	zs := zktest.Start(t)
	var out, errb bytes.Buffer
	if rc := runInit([]string{"--zk", zs.Addr(), "--zk-root", "/snowflake", "--datacenters", "0-3", "--zk-insecure"}, &out, &errb); rc != exitOK {
		t.Fatalf("init: rc %d %s", rc, errb.String())
	}
	other, err := zkconn.Dial([]string{zs.Addr()}, "someone-else:secret", 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Create("/locked", nil, 0, zk.DigestACL(zk.PermAll, "someone-else", "secret")); err != nil {
		t.Fatal(err)
	}
	hidden := `{"layout":"snowfleet/slots/v3","epoch_ms":1288834974657,"bits":"41/5/5/12","datacenters":"2-5"}`
	if _, err := other.Create("/locked/eu", []byte(hidden), 0, tree.ACL("someone-else:secret")); err != nil {
		t.Fatal(err)
	}

	fleets := func(args ...string) (int, fleetsReport, string) {
		var out, errb bytes.Buffer
		rc := runFleets(append([]string{"--json", "--zk-insecure"}, args...), &out, &errb)
		var rep fleetsReport
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatalf("fleets --json: %v\n%s", err, out.String())
		}
		return rc, rep, errb.String()
	}
	rc, rep, errs := fleets(zs.Addr())
	if rc != exitOK || len(rep.Fleets) != 1 || rep.Fleets[0].Root != "/snowflake" || rep.Fleets[0].Datacenters != "0-3" {
		t.Fatalf("fleets beside an unreadable /locked: rc %d %+v %q; want 0 and /snowflake alone", rc, rep, errs)
	}
	out.Reset()
	errb.Reset()
	if rc := runInit([]string{"--zk", zs.Addr(), "--zk-root", "/batch", "--datacenters", "9", "--zk-insecure"}, &out, &errb); rc != exitOK ||
		!strings.Contains(out.String(), "1 other fleet(s) registered in the ensemble, none overlapping") {
		t.Fatalf("init beside an unreadable /locked: rc %d %q %q; want made, one other fleet", rc, out.String(), errb.String())
	}
	rc, rep, errs = fleets("--zk-scan-skip", "/locked", zs.Addr())
	if rc != exitOK || len(rep.Fleets) != 2 || !strings.Contains(errs, "--zk-scan-skip and --scan-limit are ignored") {
		t.Fatalf("fleets --zk-scan-skip /locked: rc %d %+v %q; want 0, two fleets, the flag said ignored", rc, rep, errs)
	}
	for _, run := range []func([]string, *bytes.Buffer, *bytes.Buffer) int{
		func(a []string, o, e *bytes.Buffer) int { return runFleets(append(a, zs.Addr()), o, e) },
		func(a []string, o, e *bytes.Buffer) int { return runInit(append(a, "--zk", zs.Addr()), o, e) },
	} {
		var out, errb bytes.Buffer
		if rc := run([]string{"--zk-scan-skip", "locked/"}, &out, &errb); rc != exitUsage || !strings.Contains(errb.String(), `--zk-scan-skip "locked/"`) {
			t.Errorf("--zk-scan-skip locked/: rc %d %q; want 2 naming the flag", rc, errb.String())
		}
	}
}
