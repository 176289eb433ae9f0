package worker

import (
	"bufio"
	"context"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestFairness runs both transports under four hogs (issue 19).
func TestFairness(t *testing.T) { bothServeModes(t, testFairness) }

// hogBatch is what one hog sends in one write: 292 NEXTIDS 4096 (4 KiB),
// each a whole millisecond of the generator.
var hogBatch = strings.Repeat("NEXTIDS 4096\r\n", 292)

// hog sends hogBatch, reads the replies (unless lazy), and again, until
// ctx ends. It reports how many replies it read.
func hog(ctx context.Context, t *testing.T, addr string, lazy bool, replies *int) {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Error(err)
		return
	}
	defer nc.Close()
	go func() { <-ctx.Done(); nc.Close() }()
	br := bufio.NewReaderSize(nc, 64<<10)
	for ctx.Err() == nil {
		if _, err := nc.Write([]byte(hogBatch)); err != nil {
			return
		}
		if lazy {
			<-ctx.Done()
			return
		}
		for i := 0; i < 292; i++ {
			line, err := br.ReadSlice('\n')
			if err != nil {
				return
			}
			if line[0] != '*' {
				t.Errorf("hog got %q", line)
				return
			}
			for j := 0; j < 4096; j++ {
				if _, err := br.ReadSlice('\n'); err != nil {
					return
				}
			}
			*replies++
		}
	}
}

// pingRTTs measures n round trips of PING on each of conns fresh
// connections, one at a time a connection, and returns them all.
func pingRTTs(t *testing.T, addr string, conns, n int) []time.Duration {
	var mu sync.Mutex
	var all []time.Duration
	var wg sync.WaitGroup
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				t.Error(err)
				return
			}
			defer nc.Close()
			br := bufio.NewReader(nc)
			var mine []time.Duration
			for range n {
				_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
				start := time.Now()
				if _, err := nc.Write([]byte("PING\r\n")); err != nil {
					t.Error(err)
					return
				}
				line, err := br.ReadString('\n')
				if err != nil || line != "+PONG\r\n" {
					t.Errorf("PING = %q, %v", line, err)
					return
				}
				mine = append(mine, time.Since(start))
				time.Sleep(2 * time.Millisecond)
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	slices.Sort(all)
	return all
}

// testFairness: four connections that each pipeline 292 NEXTIDS 4096 (292
// ms of the generator) in one write, two reading their replies and two
// not, must not hold up others: the PING round trips of 8 other
// connections stay under 5 ms at the 99th percentile (a correctness bound:
// the issue measured 72 ms, and 755 ms once the hogs read). Shutdown, with
// the hogs' backlog unanswered, holds DrainTimeout.
func testFairness(t *testing.T) {
	const drain = 500 * time.Millisecond
	w := startFake(t, func(c *Config) { c.DrainTimeout = drain })
	base := pingRTTs(t, w.addr, 8, 20)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	replies := make([]int, 4)
	for i := range 4 {
		wg.Add(1)
		go func() { defer wg.Done(); hog(ctx, t, w.addr, i >= 2, &replies[i]) }()
	}
	time.Sleep(100 * time.Millisecond) // the batches are in
	// A shared 2-core VM stalls now and then for tens of ms, all
	// connections at once; unfairness costs every measurement hundreds of
	// ms (the hogs' backlog lasts over a second). Up to three tries.
	bound := fairBound()
	var p99 time.Duration
	for try := 1; try <= 3; try++ {
		rtts := pingRTTs(t, w.addr, 8, 50)
		p99 = rtts[len(rtts)*99/100]
		t.Logf("PING round trips: idle p99 %v; under 4 hogs median %v, p99 %v, max %v (%d PINGs)",
			base[len(base)*99/100], rtts[len(rtts)/2], p99, rtts[len(rtts)-1], len(rtts))
		if p99 <= bound {
			break
		}
	}
	if p99 > bound {
		t.Errorf("PING p99 %v under 4 hogs, want under %v", p99, bound)
	}

	start := time.Now()
	err := w.srv.Shutdown(context.Background())
	took := time.Since(start)
	cancel()
	wg.Wait()
	t.Logf("hogs read %v replies; Shutdown took %v: %v", replies, took, err)
	if took > drain+250*time.Millisecond {
		t.Errorf("Shutdown took %v with DrainTimeout %v", took, drain)
	}
}

// fairBound is the p99 a fair loop keeps other connections under while
// hogs run. The goal is 5 ms, asserted where the machine is quiet
// (SNOWFLEET_STRICT_LATENCY=1, as make hostile sets); in make test, where
// test packages share two cores, 250 ms still tells an unfair loop (whose
// backlog costs every connection over a second) from a busy machine.
func fairBound() time.Duration {
	if os.Getenv("SNOWFLEET_STRICT_LATENCY") == "1" {
		return 5 * time.Millisecond
	}
	return 250 * time.Millisecond
}
