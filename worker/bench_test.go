package worker

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// benchWorker is a worker on a real ZooKeeper with the default lease
// timings, started once per benchmark (the measurement is a sub-benchmark,
// which the testing package runs several times).
func benchWorker(b *testing.B) *testWorker {
	zk := startZK(b)
	return startWorkerWith(b, zk.Addr(), true, nil, nil)
}

// roundTrips sends req (which holds perReq requests) over conns connections
// and reads back lines (CRLF-terminated) reply lines per write, until b.N
// requests are done.
func roundTrips(b *testing.B, w *testWorker, conns int, req string, perReq, lines int) float64 {
	b.Helper()
	var wg sync.WaitGroup
	per := (b.N + conns*perReq - 1) / (conns * perReq)
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < conns; i++ {
		nc, err := net.Dial("tcp", w.addr)
		if err != nil {
			b.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer nc.Close()
			br := bufio.NewReaderSize(nc, 64<<10)
			buf := []byte(req)
			for r := 0; r < per; r++ {
				if _, err := nc.Write(buf); err != nil {
					b.Error(err)
					return
				}
				for got := 0; got < lines; got++ {
					line, err := br.ReadSlice('\n')
					if err != nil {
						b.Error(err)
						return
					}
					if line[0] == '-' {
						b.Errorf("error reply: %q", line)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	b.StopTimer()
	total := float64(per * conns * perReq)
	b.ReportMetric(total/el.Seconds(), "req/s")
	return total / el.Seconds()
}

// BenchmarkNextID: 50 connections, one NEXTID in flight on each; the
// string sub-benchmark asks for the ID as a bulk string (NEXTID STRING),
// side by side with the integer one.
func BenchmarkNextID(b *testing.B) {
	w := benchWorker(b)
	b.Run("c50", func(b *testing.B) { roundTrips(b, w, 50, "*1\r\n$6\r\nNEXTID\r\n", 1, 1) })
	b.Run("c50-string", func(b *testing.B) {
		roundTrips(b, w, 50, "*2\r\n$6\r\nNEXTID\r\n$6\r\nSTRING\r\n", 1, 2)
	})
}

// BenchmarkNextIDPipelined: 50 connections, 16 NEXTID per write.
func BenchmarkNextIDPipelined(b *testing.B) {
	w := benchWorker(b)
	b.Run("c50-P16", func(b *testing.B) {
		roundTrips(b, w, 50, strings.Repeat("*1\r\n$6\r\nNEXTID\r\n", 16), 16, 16)
	})
}

// BenchmarkNextIDPipelinedGoroutines: the same on the goroutine-per-
// connection transport (Config.NoEventLoop, and TLS), and deeper: 64
// requests a write, so that each read leaves a backlog after its first
// slice, which waits for a turn (turns.go).
func BenchmarkNextIDPipelinedGoroutines(b *testing.B) {
	zk := startZK(b)
	w := startWorkerWith(b, zk.Addr(), true, func(c *Config) { c.NoEventLoop = true }, nil)
	for _, depth := range []int{16, 64} {
		b.Run(fmt.Sprintf("c50-P%d", depth), func(b *testing.B) {
			roundTrips(b, w, 50, strings.Repeat("*1\r\n$6\r\nNEXTID\r\n", depth), depth, depth)
		})
	}
}

// BenchmarkNextIDs4096: one connection, NEXTIDS 4096 one at a time, as
// integers and as strings; the ids/s metric is what a batching client gets (the format's cap is 4,096,000).
func BenchmarkNextIDs4096(b *testing.B) {
	w := benchWorker(b)
	b.Run("c1", func(b *testing.B) {
		rate := roundTrips(b, w, 1, "*2\r\n$7\r\nNEXTIDS\r\n$4\r\n4096\r\n", 1, 4097)
		b.ReportMetric(rate*4096, "ids/s")
	})
	// The same IDs as bulk strings (NEXTIDS 4096 STRING): two lines an ID.
	b.Run("c1-string", func(b *testing.B) {
		rate := roundTrips(b, w, 1, "*3\r\n$7\r\nNEXTIDS\r\n$4\r\n4096\r\n$6\r\nSTRING\r\n", 1, 1+2*4096)
		b.ReportMetric(rate*4096, "ids/s")
	})
}
