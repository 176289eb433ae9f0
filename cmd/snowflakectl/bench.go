package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"strings"
	"sync"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/snowfleet/snowfleet/worker/client"
)

// benchResult is the outcome of a run, as printed and as JSON.
type benchResult struct {
	Targets     []string `json:"targets"`
	Connections int      `json:"connections"`
	Pipeline    int      `json:"pipeline"`
	Batch       int      `json:"batch"`
	Seconds     float64  `json:"seconds"`
	Requests    uint64   `json:"requests"`
	IDs         uint64   `json:"ids"`
	RequestsPS  float64  `json:"requests_per_second"`
	IDsPS       float64  `json:"ids_per_second"`
	P50Ms       float64  `json:"p50_ms"`
	P99Ms       float64  `json:"p99_ms"`
	P999Ms      float64  `json:"p999_ms"`
	MaxMs       float64  `json:"max_ms"`
	Errors      uint64   `json:"errors"`
	NoLease     uint64   `json:"nolease"`
	ClockBack   uint64   `json:"clockback"`
	OtherReply  uint64   `json:"other_replies"`
	ConnErrors  uint64   `json:"connection_errors"`
}

func (c *ctl) benchCommand() *ffcli.Command {
	fs := newFlagSet("bench")
	c.zk.register(fs)
	c.sec.register(fs)
	addrs := fs.String("addr", "", "worker `addresses`, comma-separated host:port, instead of ZooKeeper discovery")
	conns := fs.Int("c", 8, "`N` connections (1..4096), spread round robin over the workers")
	depth := fs.Int("P", 16, "pipeline depth: `N` requests (1..10000) written before their replies are read")
	batch := fs.Int("n", 1, fmt.Sprintf("`N` IDs per request (1..%d): 1 sends NEXTID, more NEXTIDS N", client.MaxBatch))
	dur := fs.Duration("d", 5*time.Second, "how long to run (a `duration`)")
	// Long names for the redis-benchmark-style letters, for scripts that
	// spell out what they set.
	fs.IntVar(conns, "connections", *conns, "the same as -c")
	fs.IntVar(depth, "pipeline", *depth, "the same as -P")
	fs.IntVar(batch, "batch", *batch, "the same as -n")
	fs.DurationVar(dur, "duration", *dur, "the same as -d")
	timeout := fs.Duration("timeout", 2*time.Second, "bound on each pipeline's round trip; slower counts as a connection error")
	asJSON := fs.Bool("json", false, "print the result as one JSON object")
	return c.command(fs, "[--addr HOST:PORT,... | --zk HOST:PORT,...] [-c N] [-P N] [-n N] [-d DURATION]",
		"benchmark workers with pipelined NEXTID/NEXTIDS",
		"Loads workers with NEXTID (or NEXTIDS n with -n above 1) over -c connections,\n"+
			"spread round robin over the workers, each writing -P requests before reading\n"+
			"their -P replies. Prints IDs/s, requests/s, the latency of a request (from the\n"+
			"write of its pipeline to its reply: p50, p99, p999, max) and the errors.\n"+
			"Workers come from --addr, or from the lease nodes in ZooKeeper, read once.",
		func(ctx context.Context, args []string) error {
			switch {
			case len(args) > 0:
				return usagef("unexpected argument %q", args[0])
			case *conns < 1 || *conns > 4096:
				return usagef("-c must be in 1..4096, got %d", *conns)
			case *depth < 1 || *depth > 10000:
				return usagef("-P must be in 1..10000, got %d", *depth)
			case *batch < 1 || *batch > client.MaxBatch:
				return usagef("-n must be in 1..%d, got %d", client.MaxBatch, *batch)
			case *dur <= 0:
				return usagef("-d %v must be positive", *dur)
			case *timeout <= 0:
				return usagef("--timeout %v must be positive", *timeout)
			}
			cfg, err := c.clientConfig(fs, *addrs)
			if err != nil {
				return err
			}
			dial, err := c.sec.options()
			if err != nil {
				return usage(err)
			}
			targets := cfg.Static
			if len(targets) == 0 {
				if targets, err = c.benchTargets(cfg.Servers); err != nil {
					return err
				}
			}
			res := bench(ctx, targets, *conns, *depth, *batch, *dur, *timeout, dial)
			if *asJSON {
				enc := json.NewEncoder(c.stdout)
				enc.SetIndent("", "  ")
				_ = enc.Encode(res)
			} else {
				printBench(c.stdout, res)
			}
			if res.Requests == 0 {
				return errors.New("no request succeeded")
			}
			return nil
		})
}

// benchTargets are the workers holding a lease, read once from the slot
// map.
func (c *ctl) benchTargets(servers []string) ([]string, error) {
	m, err := c.zk.readSlotMap(servers, 10*time.Second)
	if err != nil {
		return nil, fmt.Errorf("discover workers: %w", err)
	}
	var targets []string
	for _, l := range m.Leases {
		if l.Serves() { // not an embedded lease: it serves nobody
			targets = append(targets, l.Addr)
		}
	}
	if len(targets) == 0 {
		return nil, fmt.Errorf("no worker holds a lease under %s", c.zk.root)
	}
	return targets, nil
}

// benchConn is one connection's tally; merged at the end, so the hot loop
// touches nothing shared.
type benchConn struct {
	dial                                       client.DialOptions
	hist                                       histogram
	requests, ids                              uint64
	noLease, clockBack, otherReply, connErrors uint64
}

func bench(ctx context.Context, targets []string, conns, depth, batch int, dur, timeout time.Duration, dial client.DialOptions) benchResult {
	tallies := make([]benchConn, conns)
	for i := range tallies {
		tallies[i].dial = dial
	}
	ctx, cancel := context.WithTimeout(ctx, dur)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tallies[i].run(ctx, targets[i%len(targets)], depth, batch, timeout)
		}()
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	var total benchConn
	for i := range tallies {
		t := &tallies[i]
		total.hist.merge(&t.hist)
		total.requests += t.requests
		total.ids += t.ids
		total.noLease += t.noLease
		total.clockBack += t.clockBack
		total.otherReply += t.otherReply
		total.connErrors += t.connErrors
	}
	ms := func(q float64) float64 { return float64(total.hist.quantile(q)) / 1e6 }
	return benchResult{
		Targets: targets, Connections: conns, Pipeline: depth, Batch: batch, Seconds: elapsed,
		Requests: total.requests, IDs: total.ids,
		RequestsPS: float64(total.requests) / elapsed, IDsPS: float64(total.ids) / elapsed,
		P50Ms: ms(0.50), P99Ms: ms(0.99), P999Ms: ms(0.999), MaxMs: ms(1),
		Errors:  total.noLease + total.clockBack + total.otherReply + total.connErrors,
		NoLease: total.noLease, ClockBack: total.clockBack, OtherReply: total.otherReply, ConnErrors: total.connErrors,
	}
}

// run pipelines on one connection to addr until ctx ends, reconnecting
// after a connection error.
func (b *benchConn) run(ctx context.Context, addr string, depth, batch int, timeout time.Duration) {
	ids := make([]int64, batch)
	for ctx.Err() == nil {
		dctx, cancel := context.WithTimeout(ctx, timeout)
		c, err := client.DialWith(dctx, addr, b.dial)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				b.connErrors++
				sleepCtx(ctx, 100*time.Millisecond)
			}
			continue
		}
		b.pipeline(ctx, c, ids, depth, timeout)
		c.Close()
	}
}

// pipeline writes depth requests, reads depth replies, and again, until ctx
// ends or the connection fails.
func (b *benchConn) pipeline(ctx context.Context, c *client.Conn, ids []int64, depth int, timeout time.Duration) {
	batch := len(ids)
	for ctx.Err() == nil {
		_ = c.SetDeadline(time.Now().Add(timeout))
		for range depth {
			if batch == 1 {
				c.SendNext()
			} else {
				c.SendNextN(batch)
			}
		}
		t0 := time.Now()
		if err := c.Flush(); err != nil {
			b.connError(ctx)
			return
		}
		for range depth {
			var err error
			if batch == 1 {
				_, err = c.ReceiveNext()
			} else {
				err = c.ReceiveNextN(ids)
			}
			var re *client.ReplyError
			switch {
			case err == nil:
				b.hist.record(uint64(time.Since(t0)))
				b.requests++
				b.ids += uint64(batch)
			case errors.As(err, &re):
				switch re.Code {
				case client.CodeNoLease:
					b.noLease++
				case client.CodeClockBack:
					b.clockBack++
				default:
					b.otherReply++
				}
			default:
				b.connError(ctx)
				return
			}
		}
	}
}

// connError counts a failure unless the run is over: a read cut by the end
// of the run is not the worker's fault.
func (b *benchConn) connError(ctx context.Context) {
	if ctx.Err() == nil {
		b.connErrors++
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func printBench(w io.Writer, r benchResult) {
	fmt.Fprintf(w, "targets      %d worker(s): %s\n", len(r.Targets), strings.Join(r.Targets, ", "))
	fmt.Fprintf(w, "load         %d connection(s), pipeline %d, batch %d (%s)\n", r.Connections, r.Pipeline, r.Batch, cmdName(r.Batch))
	fmt.Fprintf(w, "duration     %.2fs\n", r.Seconds)
	fmt.Fprintf(w, "requests     %d (%.0f/s)\n", r.Requests, r.RequestsPS)
	fmt.Fprintf(w, "ids          %d (%.0f/s)\n", r.IDs, r.IDsPS)
	fmt.Fprintf(w, "latency      p50 %.3fms  p99 %.3fms  p999 %.3fms  max %.3fms\n", r.P50Ms, r.P99Ms, r.P999Ms, r.MaxMs)
	fmt.Fprintf(w, "errors       %d (nolease %d, clockback %d, other replies %d, connection %d)\n",
		r.Errors, r.NoLease, r.ClockBack, r.OtherReply, r.ConnErrors)
}

func cmdName(batch int) string {
	if batch == 1 {
		return "NEXTID"
	}
	return fmt.Sprintf("NEXTIDS %d", batch)
}

// histogram counts nanosecond values in log-linear buckets: exact below
// 128, then 128 buckets per power of two, so a quantile is within 1%.
type histogram struct {
	counts [64 << histSubBits]uint64
	n      uint64
	max    uint64
}

const histSubBits = 7

func histIndex(v uint64) int {
	if v < 1<<histSubBits {
		return int(v)
	}
	shift := bits.Len64(v) - histSubBits - 1
	return (shift+1)<<histSubBits + int(v>>shift) - 1<<histSubBits
}

// histValue is the middle of bucket i.
func histValue(i int) uint64 {
	if i < 1<<histSubBits {
		return uint64(i)
	}
	shift := i>>histSubBits - 1
	top := uint64(i&(1<<histSubBits-1)) + 1<<histSubBits
	return top<<shift + (uint64(1)<<shift)/2
}

func (h *histogram) record(v uint64) {
	h.counts[histIndex(v)]++
	h.n++
	h.max = max(h.max, v)
}

func (h *histogram) merge(o *histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.max = max(h.max, o.max)
}

// quantile is the value at quantile q in 0..1 (1 is the exact maximum).
func (h *histogram) quantile(q float64) uint64 {
	if h.n == 0 {
		return 0
	}
	if q >= 1 {
		return h.max
	}
	rank := uint64(q*float64(h.n)) + 1
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return min(histValue(i), h.max)
		}
	}
	return h.max
}
