package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/integration/zktest"
	"github.com/snowfleet/snowfleet/snowflake"
)

// whois names the process that issued an ID from the slot's history in
// ZooKeeper, and says which IDs no holder issued; history export writes
// the same histories for whois and audit offline, which give the same
// answers from the file (#41 items 2, 3).
func TestWhoisHistoryExportAndAudit(t *testing.T) {
	zks := zktest.Start(t)
	root := "/whois-test"
	zkFlag := []string{"--zk", zks.Addr(), "--zk-root", root}
	a := startHolder(t, zks.Addr(), root, "10.0.0.1:7609")
	var ids []string
	for range 3 {
		id, err := a.c.Generator().Next()
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, strconv.FormatInt(id, 10))
		time.Sleep(2 * time.Millisecond)
	}
	stA := a.c.Status()
	a.stop() // released: its tenure ends at its last ID
	f, _ := snowflake.Decode(mustInt(t, ids[0]))
	forged, _ := snowflake.Encode(snowflake.Fields{UnixMs: f.UnixMs + time.Hour.Milliseconds(), Datacenter: f.Datacenter, Machine: f.Machine})
	before, _ := snowflake.Encode(snowflake.Fields{UnixMs: f.UnixMs - time.Hour.Milliseconds(), Datacenter: f.Datacenter, Machine: f.Machine})
	all := append(append([]string{}, ids...), strconv.FormatInt(forged, 10), strconv.FormatInt(before, 10), "9223372036854775807")

	var out, errb bytes.Buffer
	rc := run(append(append([]string{"whois"}, zkFlag...), all...), input{}, &out, &errb)
	text := out.String()
	t.Logf("whois:\n%s%s", text, errb.String())
	if rc != exitFailure {
		t.Fatalf("whois rc %d, want %d: an ID in no tenure is a finding", rc, exitFailure)
	}
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if len(lines) != len(all) {
		t.Fatalf("%d lines for %d IDs", len(lines), len(all))
	}
	host, _ := os.Hostname()
	for i := range ids {
		want := ids[i] + "  " + host + " pid " + strconv.Itoa(os.Getpid()) + "  "
		if !strings.HasPrefix(lines[i], want) || !strings.Contains(lines[i], "lease "+stA.LeaseNode) || !strings.Contains(lines[i], "released") {
			t.Errorf("whois of A's ID: %q; want it to start %q and name A's lease %s, released", lines[i], want, stA.LeaseNode)
		}
	}
	for i, want := range []string{"no tenure", "before history", "impossible"} {
		if l := lines[len(ids)+i]; !strings.Contains(l, want) {
			t.Errorf("whois of %s: %q, want %q", all[len(ids)+i], l, want)
		}
	}

	file := filepath.Join(t.TempDir(), "history.json")
	errb.Reset()
	if rc := run(append(append([]string{"history"}, zkFlag...), "export", "--out", file), input{}, &out, &errb); rc != exitOK {
		t.Fatalf("history export rc %d: %s", rc, errb.String())
	}
	live, offline := whoisJSON(t, append(zkFlag, all...)), whoisJSON(t, append([]string{"--history", file}, all...))
	if live != offline {
		t.Errorf("whois from ZooKeeper and from the export differ:\n%s\n%s", live, offline)
	}

	out.Reset()
	errb.Reset()
	in := strings.Join(append(append([]string{}, ids...), strconv.FormatInt(forged, 10)), "\n") + "\n"
	rc = auditFrom([]string{"--history", file, "--json"}, strings.NewReader(in), &out, &errb)
	var rep auditReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("audit --json: %v: %s %s", err, out.String(), errb.String())
	}
	if rc != exitFailure || rep.NoTenureIDs != 1 || len(rep.NoTenure) != 1 || rep.NoTenure[0].ID != forged || rep.InTenureIDs != len(ids) || rep.OverlapsN != 0 {
		t.Errorf("audit --history rc %d: %+v; want the forged ID in no tenure (a finding), the %d of A in its tenure", rc, rep, len(ids))
	}
}

func whoisJSON(t *testing.T, args []string) string {
	t.Helper()
	var out, errb bytes.Buffer
	run(append([]string{"whois", "--json"}, args...), input{}, &out, &errb)
	if out.Len() == 0 {
		t.Fatalf("whois --json %v: no output; %s", args, errb.String())
	}
	return out.String()
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
