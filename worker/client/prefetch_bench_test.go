package client

import (
	"context"
	"syscall"
	"testing"
	"time"

	bw "github.com/bwmarrin/snowflake"

	"github.com/snowfleet/snowfleet/worker/client/fleettest"
)

// BenchmarkPrefetch draws IDs one Next at a time, as an application
// thread would, from a live 3-worker fleet through the prefetch buffer, and
// beside it generates IDs in process with bwmarrin/snowflake, in the same
// run. ids/s is the rate, cpu-ns/id this process's CPU (user + system, the
// refills included; the workers are other processes) per ID.
//
//	go test -run '^$' -bench Prefetch -benchtime 3s ./worker/client/
func BenchmarkPrefetch(b *testing.B) {
	b.Run("fleet-prefetch-4096", func(b *testing.B) {
		_, ws := fleettest.StartFleet(b, testRoot, 3)
		cfg := DefaultConfig()
		cfg.Static = []string{ws[0].Addr, ws[1].Addr, ws[2].Addr}
		cfg.Prefetch = MaxBatch
		c, err := New(cfg, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		ctx := context.Background()
		fleettest.WaitFor(ctx, 10*time.Second, func() bool { return c.prefetched() >= MaxBatch })
		measure(b, func() {
			if _, err := c.Next(ctx); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("bwmarrin-in-process", func(b *testing.B) {
		node, err := bw.NewNode(1)
		if err != nil {
			b.Fatal(err)
		}
		measure(b, func() { node.Generate() })
	})
}

// measure runs op b.N times and reports ids/s and cpu-ns/id.
func measure(b *testing.B, op func()) {
	cpu0 := processCPU()
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		op()
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "ids/s")
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/id")
}

// processCPU is this process's user and system CPU time so far, in ns.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
