package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/snowflake"
)

// auditIDs makes n IDs of slot s, one a millisecond from ms.
func auditIDs(t *testing.T, s snowflake.Slot, ms int64, n int) []int64 {
	t.Helper()
	out := make([]int64, n)
	for i := range out {
		id, err := snowflake.Encode(snowflake.Fields{UnixMs: ms + int64(i), Datacenter: s.Datacenter, Machine: s.Machine})
		if err != nil {
			t.Fatal(err)
		}
		out[i] = id
	}
	return out
}

// audit (#41 item 3) reads a table's IDs and finds each kind of trouble:
// an ID issued twice, one of a datacenter outside the fleet, values no ID
// can be (text, negative, past the end of the ID space, stamped days
// ahead); it counts the IDs per slot, exits 1 on any finding and 0 on a
// clean table, reads a CSV column by number or by header, and says what it
// could not check.
func TestAudit(t *testing.T) {
	t.Parallel()
	now := time.Now().Add(-time.Hour).UnixMilli()
	a, b, foreign := snowflake.Slot{Datacenter: 3, Machine: 1}, snowflake.Slot{Datacenter: 3, Machine: 2}, snowflake.Slot{Datacenter: 9, Machine: 0}
	clean := append(auditIDs(t, a, now, 500), auditIDs(t, b, now, 300)...)
	ahead, err := snowflake.Encode(snowflake.Fields{UnixMs: time.Now().Add(72 * time.Hour).UnixMilli(), Datacenter: 3})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, id := range clean {
		lines = append(lines, fmt.Sprint(id))
	}
	dir := t.TempDir()
	write := func(name string, ls []string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.Join(ls, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		rc := auditFrom(args, strings.NewReader(""), &out, &errb)
		return rc, out.String(), errb.String()
	}
	if rc, out, errs := run("--datacenters", "0-3", write("clean.txt", lines)); rc != exitOK ||
		!strings.Contains(out, "audit: 800 IDs read") || !strings.Contains(out, "0 finding(s)") || !strings.Contains(out, "dc03-m01  500") {
		t.Fatalf("a clean table: rc %d, %q %q; want 0, 800 IDs, 500 of dc03-m01", rc, out, errs)
	}
	dup := clean[17]
	bad := append(append([]string{}, lines...), fmt.Sprint(dup), fmt.Sprint(auditIDs(t, foreign, now, 1)[0]),
		"hello", "-5", "9223372036854775808", fmt.Sprint(ahead))
	rc, out, _ := run("--datacenters", "0-3", write("bad.txt", bad))
	for _, want := range []string{
		fmt.Sprintf("DUPLICATE %d ×2 (dc03-m01,", dup),
		"OUTSIDE ", "datacenter 9 is not the fleet's (0-3)",
		`IMPOSSIBLE line 803 "hello": not an ID`, `IMPOSSIBLE line 804 "-5"`,
		`"9223372036854775808": past the end of the ID space`, "more than a day ahead of now",
		"6 finding(s): 1 issued twice, 1 outside the fleet, 4 impossible",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("audit of a bad table lacks %q:\n%s", want, out)
		}
	}
	if rc != exitFailure {
		t.Errorf("audit of a bad table: rc %d, want 1", rc)
	}

	// A CSV column by header name and by number, as --json.
	csvLines := []string{"name,id,note"}
	for i, id := range clean[:50] {
		csvLines = append(csvLines, fmt.Sprintf("row%d,%d,\"x, y\"", i, id))
	}
	csvLines = append(csvLines, fmt.Sprintf("again,%d,z", clean[3]))
	p := write("t.csv", csvLines)
	for _, col := range []string{"id", "2"} {
		rc, out, errs := run("--json", "--column", col, p)
		var rep auditReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("--json: %v\n%s", err, out)
		}
		if rc != exitFailure || rep.IDs != 51 || rep.DuplicateIDs != 1 || rep.Duplicates[0].ID != clean[3] || rep.Impossibles != 0 ||
			len(rep.NotChecked) != 2 {
			t.Errorf("--column %s: rc %d, %+v (%s); want 51 IDs, %d twice, the datacenters and tenures not checked", col, rc, rep, errs, clean[3])
		}
	}
	if rc, _, errs := run("--column", "nope", p); rc != exitUsage || !strings.Contains(errs, `no such column "nope"`) {
		t.Errorf("--column nope: rc %d, %q; want 2 naming the column", rc, errs)
	}
	var out2, errb bytes.Buffer
	if rc := auditFrom([]string{"-"}, strings.NewReader(strings.Join(lines[:10], "\n")), &out2, &errb); rc != exitOK || !strings.Contains(out2.String(), "10 IDs read from stdin") {
		t.Errorf("audit - from stdin: rc %d, %q", rc, out2.String())
	}
}

// audit --history finds what the history itself shows: two tenures of a
// slot that share timestamps (a holder that started below its
// predecessor's ceiling), naming both leases and the span, as a finding
// even when every ID lies in a tenure and none is repeated; the same
// history with the second tenure starting at the first's ceiling is clean.
func TestAuditOverlappingTenures(t *testing.T) {
	t.Parallel()
	ms := time.Now().Add(-time.Hour).UnixMilli()
	s := snowflake.Slot{Datacenter: 3, Machine: 7}
	var lines []string
	for _, id := range auditIDs(t, s, ms+1, 300) {
		lines = append(lines, fmt.Sprint(id))
	}
	dir := t.TempDir()
	ids := filepath.Join(dir, "ids")
	if err := os.WriteFile(ids, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	history := func(name string, secondFloor int64) string {
		h := historyFile{Root: "/snowflake", Datacenters: "3", Slots: map[string]tree.History{s.String(): tree.History{}.
			With(tree.Tenure{Lease: "lease-a", Host: "host-a", PID: 11, FloorMs: ms, CeilingMs: ms + 200}).
			With(tree.Tenure{Lease: "lease-b", Host: "host-b", PID: 22, FloorMs: secondFloor, CeilingMs: ms + 400})}}
		b, _ := json.Marshal(h)
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var out, errb bytes.Buffer
	if rc := auditFrom([]string{"--history", history("clean.json", ms+200), ids}, nil, &out, &errb); rc != exitOK {
		t.Fatalf("tenures end to end: audit rc %d:\n%s%s", rc, out.String(), errb.String())
	}
	out.Reset()
	rc := auditFrom([]string{"--history", history("overlap.json", ms+150), ids}, nil, &out, &errb)
	text := out.String()
	want := "OVERLAP dc03-m07 " + time.UnixMilli(ms+150).UTC().Format(msTime) + ".." + time.UnixMilli(ms+200).UTC().Format(msTime) + ": tenures lease-a (host-a pid 11) and lease-b (host-b pid 22)"
	if rc != exitFailure || !strings.Contains(text, want) || !strings.Contains(text, "1 finding(s)") {
		t.Fatalf("B from ms+150 under A's ceiling ms+200: audit rc %d:\n%s\nwant exit 1, one finding, a line with %q", rc, text, want)
	}
	out.Reset()
	auditFrom([]string{"--history", history("overlap.json", ms+150), "--json", ids}, nil, &out, &errb)
	var rep auditReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || rep.OverlapsN != 1 || len(rep.Overlaps) != 1 || rep.Overlaps[0].B.Lease != "lease-b" {
		t.Fatalf("audit --json: %v %+v", err, rep)
	}
}
