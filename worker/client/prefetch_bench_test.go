package client

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	bw "github.com/bwmarrin/snowflake"

	"github.com/snowfleet/snowfleet/integration/fleettest"
	"github.com/snowfleet/snowfleet/snowflake"
)

// BenchmarkPrefetch draws IDs one Next at a time, as an application
// thread would, through the prefetch buffer from a live fleet of 2 and of
// 4 workers (each its own process, as fleettest starts them), and beside
// them generates IDs in process with bwmarrin/snowflake, in the same run.
// ids/s is the rate, of-cap the share of the workers' combined cap (4,096
// IDs a millisecond each), cpu-ns/id this process's CPU (user + system, the
// refills included; the workers are other processes) per ID, stale-ms-max
// and stale-ms-mean the age of the IDs handed out (one in 1,024 sampled):
// how much older than the moment Next returned it an ID was.
//
//	go test -run '^$' -bench Prefetch -benchtime 3s ./worker/client/
func BenchmarkPrefetch(b *testing.B) {
	// One fleet of 4, started once (the testing package calls each
	// sub-benchmark several times); the 2-worker client uses two of them.
	_, ws := fleettest.StartFleet(b, testRoot, 4)
	for _, workers := range []int{2, 4} {
		b.Run(fmt.Sprintf("fleet-%d-prefetch-4096", workers), func(b *testing.B) {
			cfg := DefaultConfig()
			for _, w := range ws[:workers] {
				cfg.Static = append(cfg.Static, w.Addr)
			}
			cfg.Prefetch = MaxBatch
			c, err := New(cfg, nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			ctx := context.Background()
			fleettest.WaitFor(ctx, 10*time.Second, func() bool { return c.prefetched() >= MaxBatch })
			measure(b, workers, func() int64 {
				id, err := c.Next(ctx)
				if err != nil {
					b.Fatal(err)
				}
				return id
			})
		})
	}
	b.Run("bwmarrin-in-process", func(b *testing.B) {
		node, err := bw.NewNode(1)
		if err != nil {
			b.Fatal(err)
		}
		// bwmarrin's IDs count from its own epoch, Twitter's, which is ours.
		measure(b, 1, func() int64 { return node.Generate().Int64() })
	})
}

// measure runs op b.N times and reports ids/s, of-cap (of workers
// generators' cap), cpu-ns/id and the staleness of a sample of the IDs.
func measure(b *testing.B, workers int, op func() int64) {
	var staleMax, staleSum, samples int64
	cpu0 := processCPU()
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		id := op()
		if i&1023 == 0 {
			f, _ := snowflake.Decode(id)
			age := time.Now().UnixMilli() - f.UnixMs
			staleMax, staleSum, samples = max(staleMax, age), staleSum+age, samples+1
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	rate := float64(b.N) / elapsed.Seconds()
	b.ReportMetric(rate, "ids/s")
	b.ReportMetric(rate/(float64(workers)*4.096e6), "of-cap")
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/id")
	b.ReportMetric(float64(staleMax), "stale-ms-max")
	b.ReportMetric(float64(staleSum)/float64(max(samples, 1)), "stale-ms-mean")
}

// processCPU is this process's user and system CPU time so far, in ns.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
