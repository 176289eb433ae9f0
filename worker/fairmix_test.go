package worker

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/integration/testenv"
)

// The fairness-in-IDs test (issue 38) runs three processes, so that none
// takes the CPU from another's goroutines: the worker (this test binary
// re-executed as fairMixServer), the hogs (re-executed as fairMixHogs, at
// idle priority: testenv.IdleCommand), and the test itself, whose one
// client draws single NEXTIDs and measures them. Within one process the
// hogs' readers, a goroutine each, would queue ahead of the measuring
// client in Go's scheduler, and the figure would be the test's, not the
// worker's; at the same priority as the worker, the hogs' process took a
// core from the worker's loops a scheduler tick (4 ms) at a time, and 256
// NEXTID pipeliners measured 7.6-20 ms where at idle priority they measure
// 2.9-4.7 (deploy/bench-history.md).
const fairMixRole = "SNOWFLEET_FAIRMIX_ROLE"

// fairMixKinds are the hogs: each pipelines its request, in writes of a few
// KiB, three connections in four reading their replies in a goroutine of
// their own and the fourth never reading (the socket buffers bound it).
// "http" pipelines GET /ids?count=4096 on IDs over HTTP; "mix" deals the
// other kinds out in turn.
var fairMixKinds = []struct{ name, req string }{
	{"nextids4096", "NEXTIDS 4096\r\n"},
	{"nextrange2048", "NEXTRANGE 2048\r\n"},
	{"nextrange4096", "NEXTRANGE 4096\r\n"},
	{"nextid", "NEXTID\r\n"},
	{"http4096", "GET /ids?count=4096 HTTP/1.1\r\nHost: w\r\n\r\n"},
}

// TestFairnessMix (issue 38): under 64 and 256 hog connections of every
// kind and of them all mixed, a client issuing single NEXTIDs keeps its p99
// within fairBound (5 ms in make hostile), on both transports. Before
// the fairness in IDs, 64 NEXTRANGE 2048 pipeliners held it at 230 ms a
// request and more, and the goroutines' client timed out.
func TestFairnessMix(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes and loads the machine for a minute")
	}
	// make hostile measures each mix once, for 3 s. make test, whose
	// packages share two cores under the race detector, looks for an
	// unfair worker only (before the rule, requests of 230 ms and more):
	// up to three tries of 2 s, as TestFairness.
	measure, tries := 2*time.Second, 3
	if os.Getenv("SNOWFLEET_STRICT_LATENCY") == "1" {
		measure, tries = 3*time.Second, 1
	}
	for _, mode := range []string{"loop", "goroutines"} {
		t.Run(mode, func(t *testing.T) {
			srv := startFairMixServer(t, mode == "goroutines")
			kinds := append(slices.Clone(fairMixKinds), struct{ name, req string }{"mix", ""})
			for _, k := range kinds {
				for _, n := range []int{64, 256} {
					t.Run(fmt.Sprintf("%s-%d", k.name, n), func(t *testing.T) {
						stop := startFairMixHogs(t, srv, k.name, n)
						defer stop()
						time.Sleep(300 * time.Millisecond) // the pipelines are in
						bound := fairBound()
						var p99 time.Duration
						for range tries {
							rtts := nextIDRTTs(t, srv.resp, measure)
							if len(rtts) < 20 {
								t.Logf("%d hogs %s: %d NEXTIDs in %v", n, k.name, len(rtts), measure)
								p99 = measure
								continue
							}
							p99 = rtts[len(rtts)*99/100]
							t.Logf("%d hogs %s: NEXTID p50 %v p99 %v max %v (%d requests)",
								n, k.name, rtts[len(rtts)/2], p99, rtts[len(rtts)-1], len(rtts))
							if p99 <= bound {
								break
							}
						}
						if p99 > bound {
							t.Errorf("NEXTID p99 %v under %d %s hogs, want under %v", p99, n, k.name, bound)
						}
					})
				}
			}
		})
	}
}

// fairMixAddrs are the worker process's ports.
type fairMixAddrs struct{ resp, http string }

// startFairMixServer re-executes this test binary as the worker: a
// fakeLease, the ID port (the epoll loop, or goroutines) and IDs over HTTP.
func startFairMixServer(t *testing.T, goroutines bool) fairMixAddrs {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFairMixProcess$", "-test.v")
	cmd.Env = append(os.Environ(), fairMixRole+"=server", "SNOWFLEET_FAIRMIX_GOROUTINES="+strconv.FormatBool(goroutines))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe() // closed when the test ends: the server exits
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if f, ok := strings.CutPrefix(sc.Text(), "fairmix-addrs "); ok {
			resp, http, _ := strings.Cut(f, " ")
			go func() { _, _ = io.Copy(io.Discard, out) }()
			return fairMixAddrs{resp: resp, http: http}
		}
	}
	t.Fatalf("the worker process printed no addresses: %v", sc.Err())
	return fairMixAddrs{}
}

// startFairMixHogs re-executes this test binary as n hogs of kind against
// srv, at idle priority, as clients on other machines would be; stop kills
// them.
func startFairMixHogs(t *testing.T, srv fairMixAddrs, kind string, n int) (stop func()) {
	t.Helper()
	cmd := testenv.IdleCommand(t, os.Args[0], "-test.run=^TestFairMixProcess$")
	cmd.Env = append(os.Environ(), fairMixRole+"=hogs", "SNOWFLEET_FAIRMIX_HOGS="+fmt.Sprintf("%s %d %s %s", kind, n, srv.resp, srv.http))
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
}

// nextIDRTTs issues single NEXTIDs on one connection for d, one at a
// time a millisecond apart, and returns their round trips, sorted; a
// NEXTID unanswered for 10 s ends the test.
func nextIDRTTs(t *testing.T, addr string, d time.Duration) []time.Duration {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	br := bufio.NewReader(nc)
	var rtts []time.Duration
	for end := time.Now().Add(d); time.Now().Before(end); {
		_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
		start := time.Now()
		if _, err := nc.Write([]byte("NEXTID\r\n")); err != nil {
			t.Fatal(err)
		}
		line, err := br.ReadString('\n')
		if err != nil || line[0] != ':' {
			t.Fatalf("NEXTID = %q, %v", line, err)
		}
		rtts = append(rtts, time.Since(start))
		time.Sleep(time.Millisecond)
	}
	slices.Sort(rtts)
	return rtts
}

// TestFairMixProcess is TestFairnessMix's other processes; run alone it
// does nothing.
func TestFairMixProcess(t *testing.T) {
	switch os.Getenv(fairMixRole) {
	case "server":
		fairMixServer(t)
	case "hogs":
		fairMixHogs(t)
	default:
		t.Skip("a process of TestFairnessMix")
	}
}

// fairMixServer serves until its stdin closes.
func fairMixServer(t *testing.T) {
	goroutines := os.Getenv("SNOWFLEET_FAIRMIX_GOROUTINES") == "true"
	w := startFake(t, func(c *Config) {
		c.NoEventLoop = goroutines
		c.MaxConns = 10_000
		c.WriteTimeout = time.Hour // a hog that never reads stays, holding its backlog
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := w.srv.IDsServer()
	go hs.Serve(w.srv.IDsListener(ln))
	defer hs.Close()
	fmt.Printf("fairmix-addrs %s %s\n", w.addr, ln.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// fairMixHogs runs the hogs until it is killed.
func fairMixHogs(t *testing.T) {
	f := strings.Fields(os.Getenv("SNOWFLEET_FAIRMIX_HOGS"))
	if len(f) != 4 {
		t.Fatalf("SNOWFLEET_FAIRMIX_HOGS=%q: want kind n resp-addr http-addr", f)
	}
	n, _ := strconv.Atoi(f[1])
	var wg sync.WaitGroup
	for i := range n {
		k := fairMixKinds[i%len(fairMixKinds)]
		if f[0] != "mix" {
			k = fairMixKinds[slices.IndexFunc(fairMixKinds, func(k struct{ name, req string }) bool { return k.name == f[0] })]
		}
		addr := f[2]
		if strings.HasPrefix(k.req, "GET") {
			addr = f[3]
		}
		wg.Add(1)
		go func() { defer wg.Done(); pipelineHog(context.Background(), addr, k.req, i%4 != 3) }()
	}
	wg.Wait()
}

// drainSlowly reads nc until it fails, in reads of up to 256 KiB at most
// 200 a second: all the worker sends (50 MB/s a hog at least, the
// generator makes 90 MB/s of NEXTIDS 4096 replies for them all), at a
// cost to this process's CPU of hundreds of wake-ups a second instead of
// one per write of the worker's (hundreds of thousands under NEXTID
// pipeliners, as much CPU as the worker's own).
func drainSlowly(nc net.Conn) {
	buf := make([]byte, 256<<10)
	for {
		if _, err := nc.Read(buf); err != nil {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// pipelineHog writes req over and over in 4 KiB writes, reading the
// replies in a goroutine of its own (unless !read), and reconnects when
// the worker closes it.
func pipelineHog(ctx context.Context, addr, req string, read bool) {
	batch := []byte(strings.Repeat(req, max(4096/len(req), 1)))
	for ctx.Err() == nil {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		if read {
			go drainSlowly(nc)
		}
		for {
			if _, err := nc.Write(batch); err != nil {
				break
			}
		}
		nc.Close()
	}
}
