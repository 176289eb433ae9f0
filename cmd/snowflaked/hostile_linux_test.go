package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/integration/testenv"
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
	bin := build(t)
	zks := zktest.Start(t)
	d := startDaemon(t, bin, nil, "--zk", zks.Addr(), "--zk-root", "/hostile",
		"--renew", "300ms", "--horizon", "5s", "--read-timeout", "2s", "--write-timeout", "2s", "--log-level", "info")
	d.waitReady(15 * time.Second)
	pid := d.cmd.Process.Pid

	ctx, cancel := context.WithTimeout(context.Background(), dur)
	defer cancel()
	attackers := startHostileAttackers(t, d, dur)

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

// hostileRoleEnv, set to "attackers", makes a re-executed test binary
// TestHostile's attackers (TestHostileAttackers); hostileTargetEnv holds
// the worker's ID port, its admin port and how long to attack, for it.
const (
	hostileRoleEnv   = "SNOWFLEET_HOSTILE_ROLE"
	hostileTargetEnv = "SNOWFLEET_HOSTILE_TARGET"
)

// hostileAttackers is the attackers' process.
type hostileAttackers struct {
	cmd *exec.Cmd
	out bytes.Buffer
}

// startHostileAttackers re-executes this test binary as the attackers of
// d for dur, at idle priority (testenv.IdleCommand): they stand for
// clients on other machines, and in this process, beside the clean
// clients, their goroutines took the clean clients' turns in one Go
// scheduler (it polls the network only when its run queues are empty, or
// every 10 ms).
func startHostileAttackers(t *testing.T, d *daemonProc, dur time.Duration) *hostileAttackers {
	t.Helper()
	a := &hostileAttackers{cmd: testenv.IdleCommand(t, os.Args[0], "-test.run=^TestHostileAttackers$")}
	a.cmd.Env = append(os.Environ(), hostileRoleEnv+"=attackers", fmt.Sprintf("%s=%s %s %s", hostileTargetEnv, d.port, d.http, dur))
	a.cmd.Stdout, a.cmd.Stderr = &a.out, &a.out
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if a.cmd.ProcessState == nil {
			_ = a.cmd.Process.Kill()
			_ = a.cmd.Wait()
		}
	})
	return a
}

// wait waits for the attackers to end, and returns the connections they
// made, by kind.
func (a *hostileAttackers) wait(t *testing.T) []int64 {
	t.Helper()
	if err := a.cmd.Wait(); err != nil {
		t.Fatalf("the attackers' process: %v\n%s", err, a.out.String())
	}
	for _, l := range strings.Split(a.out.String(), "\n") {
		if f, ok := strings.CutPrefix(l, "hostile-attacks "); ok {
			var made []int64
			for _, n := range strings.Fields(f) {
				v, err := strconv.ParseInt(n, 10, 64)
				if err != nil {
					t.Fatalf("the attackers' count %q: %v", l, err)
				}
				made = append(made, v)
			}
			return made
		}
	}
	t.Fatalf("the attackers' process printed no counts:\n%s", a.out.String())
	return nil
}

// TestHostileAttackers is TestHostile's attackers, in a process of their
// own (startHostileAttackers); run alone it does nothing. It attacks for
// the time hostileTargetEnv gives, then prints the connections it made, by
// kind.
func TestHostileAttackers(t *testing.T) {
	if os.Getenv(hostileRoleEnv) != "attackers" {
		t.Skip("TestHostile's attackers' process")
	}
	var target struct{ port, http string }
	var dur time.Duration
	f := strings.Fields(os.Getenv(hostileTargetEnv))
	if len(f) == 3 {
		target.port, target.http = f[0], f[1]
		dur, _ = time.ParseDuration(f[2])
	}
	if dur <= 0 {
		t.Fatalf("%s=%q: want id-port admin-port duration", hostileTargetEnv, os.Getenv(hostileTargetEnv))
	}
	ctx, cancel := context.WithTimeout(context.Background(), dur)
	defer cancel()
	var wg sync.WaitGroup
	var attacks [7]atomic.Int64 // connections made, by kind
	run := func(kind, n int, attack func(ctx context.Context, nc net.Conn)) {
		if k := os.Getenv("SNOWFLEET_HOSTILE_KINDS"); k != "" && !strings.Contains(k, strconv.Itoa(kind)) {
			return
		}
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					port := target.port
					if kind == 5 {
						port = target.http
					}
					nc, err := net.DialTimeout("tcp", "127.0.0.1:"+port, time.Second)
					if err != nil {
						time.Sleep(10 * time.Millisecond)
						continue
					}
					attacks[kind].Add(1)
					stop := context.AfterFunc(ctx, func() { nc.Close() })
					attack(ctx, nc)
					stop()
					nc.Close()
				}
			}()
		}
	}
	drainAll := func(nc net.Conn) {
		buf := make([]byte, 64<<10)
		for {
			if _, err := nc.Read(buf); err != nil {
				return
			}
		}
	}
	// Garbage: random bytes, until the worker closes the connection.
	run(0, 5, func(ctx context.Context, nc net.Conn) {
		b := make([]byte, 4096)
		for i := range b {
			b[i] = byte(rand.IntN(256))
		}
		_, _ = nc.Write(b)
		drainAll(nc)
	})
	// Absurd lengths.
	absurd := []string{"*1\r\n$2147483648\r\n", "*2000000000\r\n", "*1\r\n$65537\r\n", "*" + strings.Repeat("9", 100), strings.Repeat("A", 70000)}
	run(1, 5, func(ctx context.Context, nc net.Conn) {
		_, _ = nc.Write([]byte(absurd[rand.IntN(len(absurd))]))
		drainAll(nc)
	})
	// Slowloris: a request a byte at a time, until the read timeout.
	run(2, 6, func(ctx context.Context, nc net.Conn) {
		req := "*2\r\n$7\r\nNEXTIDS\r\n$1\r\n5\r\n"
		for i := 0; ctx.Err() == nil; i++ {
			if _, err := nc.Write([]byte{req[i%(len(req)-1)]}); err != nil {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
	// Pipelines never read: closed by the output limit (or the write
	// timeout).
	run(3, 6, func(ctx context.Context, nc net.Conn) {
		batch := []byte(strings.Repeat("NEXTIDS 4096\r\n", 200))
		for ctx.Err() == nil {
			if _, err := nc.Write(batch); err != nil {
				return
			}
		}
	})
	// Heavy pipelined NEXTIDS, read back (raw: parsing 4 million IDs a
	// second would take a core of this 2-core machine from the worker).
	run(4, 6, func(ctx context.Context, nc net.Conn) {
		go drainAll(nc)
		batch := []byte(strings.Repeat("NEXTIDS 4096\r\n", 292))
		for ctx.Err() == nil {
			if _, err := nc.Write(batch); err != nil {
				return
			}
		}
	})
	// Idle admin connections: one request, then nothing.
	run(5, 6, func(ctx context.Context, nc net.Conn) {
		_, _ = nc.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"))
		drainAll(nc)
	})
	// SETNAME floods: 64 KiB names, and names that would forge lines.
	run(6, 6, func(ctx context.Context, nc net.Conn) {
		name := strings.Repeat("n", 60000)
		var b strings.Builder
		for range 20 {
			fmt.Fprintf(&b, "*3\r\n$6\r\nCLIENT\r\n$7\r\nSETNAME\r\n$%d\r\n%s\r\n", len(name), name)
			b.WriteString("*4\r\n$5\r\nHELLO\r\n$1\r\n2\r\n$7\r\nSETNAME\r\n$9\r\nx\r\nid=666\r\n")
			b.WriteString("CLIENT LIST\r\n")
		}
		req := []byte(b.String())
		buf := make([]byte, 64<<10)
		for ctx.Err() == nil {
			if _, err := nc.Write(req); err != nil {
				return
			}
			_ = nc.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
			for {
				if _, err := nc.Read(buf); err != nil {
					break
				}
			}
		}
	})

	wg.Wait()
	var counts []string
	for i := range attacks {
		counts = append(counts, strconv.FormatInt(attacks[i].Load(), 10))
	}
	fmt.Printf("hostile-attacks %s\n", strings.Join(counts, " "))
}
