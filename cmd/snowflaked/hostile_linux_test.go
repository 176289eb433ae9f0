package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/integration/zktest"
)

// SNOWFLEET_HOSTILE_KINDS, digits 0-6, runs only those kinds of attack
// (in the order of the log line), to find which one hurts.

// hostileRSSGrowth bounds how much the worker's resident memory may grow
// between the end of the first seconds of the attack and its end: the
// buffers of 40 connections, their replies included, are a few MB; a
// leak per connection or per request, over thousands of reconnects, is
// more.
const hostileRSSGrowth = 64 << 20

// TestHostile runs 40 hostile connections against a worker process while
// four clean clients draw IDs (issue 19): garbage, absurd lengths,
// slowloris, pipelines never read, heavy pipelined NEXTIDS read back,
// idle admin connections and SETNAME floods, each reconnecting when the
// worker closes it. The clean clients see no error and no repeated ID,
// their p99 stays under 5 ms, and the worker's RSS grows less than
// hostileRSSGrowth. It lasts SNOWFLEET_HOSTILE_DURATION (default 10s in
// make check; make hostile runs it for 30s). The attackers are a process
// of their own, at idle priority (startHostileAttackers).
func TestHostile(t *testing.T) {
	dur := 10 * time.Second
	if s := os.Getenv("SNOWFLEET_HOSTILE_DURATION"); s != "" {
		var err error
		if dur, err = time.ParseDuration(s); err != nil {
			t.Fatalf("SNOWFLEET_HOSTILE_DURATION=%q: %v", s, err)
		}
	}
	hostile(t, os.Getenv("SNOWFLEET_HOSTILE_KINDS"), dur)
}

// TestHostileNames is TestHostile with the SETNAME floods alone (issue 38),
// for 10 s: with little else to do, one loop of the worker parked with
// ready sockets while the other was busy, and the clean clients' p99 was
// 11-17 ms until the loops woke each other (worker/loopwake_linux.go).
func TestHostileNames(t *testing.T) {
	hostile(t, "6", 10*time.Second)
}

// hostile attacks a worker process with the kinds of attack given (digits,
// "" for all) for dur, while four clean clients draw IDs, and holds the
// clean clients' p99, the worker's RSS and its readiness.
func hostile(t *testing.T, kinds string, dur time.Duration) {
	bin := build(t)
	zks := zktest.Start(t)
	d := startDaemon(t, bin, nil, "--zk", zks.Addr(), "--zk-root", "/hostile",
		"--renew", "300ms", "--horizon", "5s", "--read-timeout", "2s", "--write-timeout", "2s", "--log-level", "info")
	d.waitReady(15 * time.Second)
	pid := d.cmd.Process.Pid

	ctx, cancel := context.WithTimeout(context.Background(), dur)
	defer cancel()
	attackers := startHostileAttackers(t, d, dur, kinds)

	time.Sleep(min(3*time.Second, dur/3)) // the attack is in full swing
	rssStart := rss(t, pid)
	cpuStart, cpuAt := cpuTime(t, pid), time.Now()
	var mu sync.Mutex
	var rtts []time.Duration
	seen := map[int64]bool{}
	var cwg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		cwg.Add(1)
		go func() {
			defer cwg.Done()
			nc, err := net.DialTimeout("tcp", "127.0.0.1:"+d.port, time.Second)
			if err != nil {
				errs <- err
				return
			}
			defer nc.Close()
			br := bufio.NewReader(nc)
			for ctx.Err() == nil {
				_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
				start := time.Now()
				if _, err := nc.Write([]byte("NEXTIDS 16\r\n")); err != nil {
					errs <- err
					return
				}
				ids := make([]int64, 0, 16)
				for i := 0; i <= 16; i++ {
					l, err := br.ReadString('\n')
					if err != nil {
						errs <- fmt.Errorf("clean client: %w", err)
						return
					}
					if i == 0 {
						if l != "*16\r\n" {
							errs <- fmt.Errorf("clean client: reply %q", l)
							return
						}
						continue
					}
					id, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(l, ":"), "\r\n"), 10, 64)
					if err != nil {
						errs <- fmt.Errorf("clean client: reply line %q", l)
						return
					}
					ids = append(ids, id)
				}
				rtt := time.Since(start)
				mu.Lock()
				rtts = append(rtts, rtt)
				for _, id := range ids {
					if seen[id] {
						mu.Unlock()
						errs <- fmt.Errorf("id %d issued twice", id)
						return
					}
					seen[id] = true
				}
				mu.Unlock()
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
	var rssMax int64
	for ctx.Err() == nil {
		rssMax = max(rssMax, rss(t, pid))
		time.Sleep(200 * time.Millisecond)
	}
	cpu := float64(cpuTime(t, pid)-cpuStart) / float64(time.Since(cpuAt))
	cwg.Wait()
	made := attackers.wait(t)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	slices.Sort(rtts)
	if len(rtts) < 100 {
		t.Fatalf("clean clients made %d requests", len(rtts))
	}
	p50, p99, worst := rtts[len(rtts)/2], rtts[len(rtts)*99/100], rtts[len(rtts)-1]
	t.Logf("p90 %v p95 %v p98 %v", rtts[len(rtts)*90/100], rtts[len(rtts)*95/100], rtts[len(rtts)*98/100])
	t.Logf("%v: hostile connections made by kind (garbage, absurd, slowloris, unread, heavy, admin, setname) %v; "+
		"clean clients %d requests, %d IDs, p50 %v p99 %v max %v; RSS %d MiB after warm-up, max %d MiB; worker CPU %.2f cores",
		dur, made, len(rtts), len(seen), p50, p99, worst, rssStart>>20, rssMax>>20, cpu)
	// The goal, 5 ms, is asserted where the machine is quiet (make hostile
	// sets SNOWFLEET_STRICT_LATENCY=1); in make test, where packages share
	// two cores, 250 ms still catches a worker that lets hostile
	// connections stall the others (seconds, before the fairness work).
	bound := 250 * time.Millisecond
	if os.Getenv("SNOWFLEET_STRICT_LATENCY") == "1" {
		bound = 5 * time.Millisecond
	}
	if p99 > bound {
		t.Errorf("clean clients' p99 %v under attack, want under %v", p99, bound)
	}
	if rssMax-rssStart > hostileRSSGrowth {
		t.Errorf("RSS grew by %d MiB under attack, bound %d MiB", (rssMax-rssStart)>>20, hostileRSSGrowth>>20)
	}
	if code, _ := d.get("/readyz"); code != 200 {
		t.Errorf("/readyz = %d after the attack", code)
	}
	_, m := d.get("/metrics")
	for _, l := range strings.Split(m, "\n") {
		if n, ok := strings.CutPrefix(l, "snowflake_worker_loop_missed_wakeups_total "); ok {
			t.Logf("epoll loops woken by a sibling (missed wake-ups): %s", n)
		}
	}
}

// cpuTime is the CPU time process pid has used, user and system: what
// an attack costs the worker, which a busy machine does not change much,
// unlike the latencies.
func cpuTime(t *testing.T, pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// The fields after the command name, which is in parentheses:
	// utime and stime are the 14th and 15th of the line, in clock ticks
	// (USER_HZ, 100 on Linux).
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// rss is the resident set of process pid, in bytes.
func rss(t *testing.T, pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}
