package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestBenchAgainstWorkers(t *testing.T) {
	zks, ws := startWorkers(t, 2)

	var out, errb bytes.Buffer
	args := []string{"--addr", ws[0].Addr + "," + ws[1].Addr, "-c", "4", "-P", "8", "-d", "500ms", "--json"}
	if rc := runBench(args, &out, &errb); rc != exitOK {
		t.Fatalf("bench rc %d, stderr %s", rc, errb.String())
	}
	var r benchResult
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("bench --json is not JSON: %v\n%s", err, out.String())
	}
	if r.Requests == 0 || r.IDs != r.Requests || r.Errors != 0 || len(r.Targets) != 2 {
		t.Fatalf("bench result %+v: want requests, IDs = requests (NEXTID), no errors, 2 targets", r)
	}
	if !(r.P50Ms > 0 && r.P50Ms <= r.P99Ms && r.P99Ms <= r.P999Ms && r.P999Ms <= r.MaxMs) {
		t.Errorf("latency quantiles out of order: %+v", r)
	}

	out.Reset()
	// The long names this time: they set the same knobs as -c, -P, -n, -d.
	args = []string{"--zk", zks.Addr(), "--zk-root", fleetRoot, "--connections", "2", "--pipeline", "4", "--batch", "100", "--duration", "300ms"}
	if rc := runBench(args, &out, &errb); rc != exitOK {
		t.Fatalf("bench %v rc %d, stderr %s", args, rc, errb.String())
	}
	text := out.String()
	t.Logf("bench:\n%s", text)
	for _, want := range []string{"2 worker(s)", "2 connection(s), pipeline 4", "NEXTIDS 100", "ids ", "requests ", "p50", "p99", "p999", "errors       0"} {
		if !strings.Contains(text, want) {
			t.Errorf("bench output lacks %q", want)
		}
	}
}

func TestHistogramQuantiles(t *testing.T) {
	var h histogram
	for v := uint64(1); v <= 100000; v++ {
		h.record(v * 1000) // 1µs .. 100ms
	}
	for _, tc := range []struct {
		q    float64
		want float64
	}{{0.5, 50e6}, {0.99, 99e6}, {0.999, 99.9e6}} {
		got := float64(h.quantile(tc.q))
		if got < tc.want*0.99 || got > tc.want*1.01 {
			t.Errorf("quantile %v = %v, want %v within 1%%", tc.q, got, tc.want)
		}
	}
	if h.quantile(1) != 100000*1000 {
		t.Errorf("max = %d", h.quantile(1))
	}
	for v := uint64(0); v < 1<<20; v += 7 {
		if i := histIndex(v); histValue(i) > v+v/64+1 || histValue(i)+histValue(i)/64+1 < v {
			t.Fatalf("value %d lands in bucket %d of value %d", v, i, histValue(i))
		}
	}
}
