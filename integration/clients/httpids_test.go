//go:build linux

package clients

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/integration/fleettest"
	"github.com/snowfleet/snowfleet/integration/zktest"
)

// TestHTTPIDsThroughBalancer draws IDs over HTTP (--http-ids, GET
// /ids?count=100) through HAProxy in HTTP mode in front of 3 workers while
// one is SIGKILLed and another SIGSTOPped past its session timeout and
// resumed: no ID repeats, and every failed request (a 503, a gateway
// error, a broken connection) falls inside a fault's window.
func TestHTTPIDsThroughBalancer(t *testing.T) {
	need(t)
	zks := zktest.Start(t)
	ws := make([]*fleettest.Worker, 3)
	idAddrs := make([]string, len(ws))
	for i := range ws {
		idAddrs[i] = zktest.FreeAddr(t)
		ws[i] = fleettest.Start(t, fleettest.Options{ZK: zks.Addr(), Root: "/http-ids",
			SessionTimeout: sessionTimeout, Renew: 200 * time.Millisecond, Horizon: time.Second,
			Args: []string{"--http-ids", idAddrs[i]}})
	}
	for _, w := range ws {
		w.WaitReady(20 * time.Second)
	}
	front := startHTTPBalancer(t, ws, idAddrs)
	runHTTPSnippets(t, "http://"+front)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	var windows []window
	var faultsDone sync.WaitGroup
	faultsDone.Add(1)
	go func() {
		defer faultsDone.Done()
		windows = httpFaults(ctx, ws)
	}()
	draws := make([]*draw, 4)
	var wg sync.WaitGroup
	for i := range draws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			draws[i] = drawHTTP(ctx, "http lane "+strconv.Itoa(i), "http://"+front+"/ids?count=100", 12*time.Second)
		}()
	}
	wg.Wait()
	faultsDone.Wait()

	var all []uint64
	codes := map[string]int{}
	for _, d := range draws {
		if d.err != nil {
			t.Errorf("%s: %v", d.name, d.err)
		}
		for _, f := range d.errs {
			codes[f.msg]++
			if within(windows, f.at) == "" {
				t.Errorf("%s: failure at %s outside every fault window: %s", d.name, f.at.Format("15:04:05.000"), f.msg)
			}
		}
		all = append(all, d.ids...)
	}
	if len(all) < 10_000 {
		t.Errorf("drew %d IDs over HTTP, want at least 10,000", len(all))
	}
	if dup := duplicates(all); dup != 0 {
		t.Errorf("%d duplicate IDs among %d drawn over HTTP", dup, len(all))
	}
	t.Logf("%d IDs over HTTP in %v, %d distinct; failures by kind: %v", len(all), time.Since(start).Round(time.Millisecond), distinct(all), codes)
	for _, w := range windows {
		t.Logf("fault %s: %s .. %s", w.name, w.start.Format("15:04:05.000"), w.end.Format("15:04:05.000"))
	}
}

// httpFaults kills worker 0, then pauses worker 1 past its session timeout
// and resumes it; worker 2 serves throughout.
func httpFaults(ctx context.Context, ws []*fleettest.Worker) []window {
	const grace = 2 * time.Second // health checks (100ms), the balancer's retries
	sleep := func(d time.Duration) {
		select {
		case <-ctx.Done():
		case <-time.After(d):
		}
	}
	var out []window
	sleep(1500 * time.Millisecond)
	t0 := time.Now()
	ws[0].Kill()
	out = append(out, window{name: "SIGKILL " + ws[0].Addr, start: t0, end: time.Now().Add(grace)})
	sleep(grace + 500*time.Millisecond)
	t1 := time.Now()
	ws[1].Pause()
	sleep(sessionTimeout + 1500*time.Millisecond)
	ws[1].Resume()
	out = append(out, window{name: "SIGSTOP/SIGCONT " + ws[1].Addr, start: t1, end: time.Now().Add(grace)})
	return out
}

// drawHTTP draws over keep-alive connections for at least min: every ID of
// a 200, and each other answer or transport error as a failure.
func drawHTTP(ctx context.Context, name, url string, min time.Duration) *draw {
	d := &draw{name: name}
	hc := &http.Client{Timeout: 3 * time.Second}
	end := time.Now().Add(min)
	for time.Now().Before(end) && ctx.Err() == nil {
		resp, err := hc.Get(url)
		if err != nil {
			d.errs = append(d.errs, failure{at: time.Now(), msg: "transport error"})
			continue
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || err != nil {
			d.errs = append(d.errs, failure{at: time.Now(), msg: "HTTP " + strconv.Itoa(resp.StatusCode)})
			if resp.StatusCode == http.StatusServiceUnavailable && strings.HasPrefix(string(body), `{"error":`) &&
				(resp.Header.Get("Retry-After") == "" || !resp.Close) {
				d.err = fmt.Errorf("a worker's 503 without Retry-After and Connection: close: %v %q", resp.Header, body)
			}
			continue
		}
		var got struct{ IDs []string }
		if err := json.Unmarshal(body, &got); err != nil || len(got.IDs) != 100 {
			d.err = fmt.Errorf("a 200 that is not 100 IDs: %q", body)
			return d
		}
		for _, s := range got.IDs {
			id, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				d.err = fmt.Errorf("not an ID: %q", s)
				return d
			}
			d.ids = append(d.ids, id)
		}
	}
	return d
}

// startHTTPBalancer runs HAProxy in HTTP mode before the workers' --http-ids
// listeners: a failed connection is retried on another worker, a 503 is
// passed to the client.
func startHTTPBalancer(t *testing.T, ws []*fleettest.Worker, idAddrs []string) string {
	t.Helper()
	return runHAProxy(t, `	mode http
	timeout connect 1s
	timeout client 60s
	timeout server 1s
	retries 3
	option redispatch
	retry-on conn-failure empty-response
`, ws, idAddrs)
}

// runHTTPSnippets runs the cookbook's curl, Python requests and fetch()
// snippets (worker/cookbook) through the balancer at base: each must print
// 100 distinct IDs.
func runHTTPSnippets(t *testing.T, base string) {
	t.Helper()
	dir := cookbook(t)
	for _, argv := range [][]string{
		{"curl", "-fsS", "--retry", "5", "--retry-all-errors", "--max-time", "2", base + "/ids?count=100"},
		{python, filepath.Join(dir, "ids_http.py"), base, "100"},
		{"node", filepath.Join(dir, "ids_http.js"), base, "100"},
	} {
		out, err := exec.Command(argv[0], argv[1:]...).Output()
		if err != nil {
			t.Fatalf("%v: %v\n%s", argv, err, out)
		}
		text := string(out)
		if argv[0] == "curl" {
			var got struct{ IDs []string }
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("curl: %v: %q", err, out)
			}
			text = strings.Join(got.IDs, "\n")
		}
		ids, err := parseIDs([]byte(text))
		if err != nil || len(ids) != 100 || distinct(ids) != 100 {
			t.Fatalf("%v: %d IDs (%d distinct), %v: %q", argv[:2], len(ids), distinct(ids), err, out)
		}
	}
}
