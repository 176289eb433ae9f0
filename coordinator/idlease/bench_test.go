package idlease

import (
	"context"
	"runtime"
	"syscall"
	"testing"
	"time"

	bwmarrin "github.com/bwmarrin/snowflake"

	"github.com/snowfleet/snowfleet/integration/zktest"
	"github.com/snowfleet/snowfleet/snowflake"
)

// BenchmarkEmbedded takes IDs through an embedded lease held in a real
// ZooKeeper (renewing every second, the defaults), from a bare
// snowflake.Generator and from bwmarrin/snowflake v0.3.0, side by side in
// one run, reporting IDs per
// second (the format's cap is 4,096,000) and CPU nanoseconds per ID from
// rusage: every thread of this process, the lease's renewals included.
// make bench-embedded runs it.
func BenchmarkEmbedded(b *testing.B) {
	zs := zktest.Start(b)
	obs := dial(b, zs.Addr())
	initRoot(b, obs, "/bench")
	cfg := DefaultConfig()
	cfg.Servers, cfg.Root = []string{zs.Addr()}, "/bench"
	cfg.Insecure = true // the test ZooKeeper has no credentials
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	l, err := Open(ctx, cfg, nil, nil)
	cancel()
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	node, err := bwmarrin.NewNode(1)
	if err != nil {
		b.Fatal(err)
	}
	ctx = context.Background()
	next := func(b *testing.B) {
		if _, err := l.Next(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("Next", func(b *testing.B) { serial(b, func() { next(b) }) })
	b.Run("Next64Goroutines", func(b *testing.B) { parallel64(b, func() { next(b) }) })
	b.Run("NextN4096", func(b *testing.B) {
		measure(b, func() int64 { return int64(b.N) * snowflake.MaxBatch }, func() {
			for i := 0; i < b.N; i++ {
				if _, err := l.NextN(ctx, snowflake.MaxBatch); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	// The bare generator, as snowflake's BenchmarkNext: what the lease
	// adds to the hot path is the difference.
	gcfg := snowflake.DefaultConfig()
	gcfg.Slot = snowflake.Slot{Datacenter: 1, Machine: 2}
	bare, err := snowflake.NewGenerator(gcfg)
	if err != nil {
		b.Fatal(err)
	}
	bareNext := func(b *testing.B) {
		if _, err := bare.Next(); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("BareGeneratorNext", func(b *testing.B) { serial(b, func() { bareNext(b) }) })
	b.Run("BareGeneratorNext64Goroutines", func(b *testing.B) { parallel64(b, func() { bareNext(b) }) })
	b.Run("BwmarrinNext", func(b *testing.B) { serial(b, func() { node.Generate() }) })
	b.Run("BwmarrinNext64Goroutines", func(b *testing.B) { parallel64(b, func() { node.Generate() }) })
	if st := l.Status(); st.Losses != 0 {
		b.Fatalf("the lease was lost %d times during the benchmark", st.Losses)
	}
}

func serial(b *testing.B, f func()) {
	measure(b, func() int64 { return int64(b.N) }, func() {
		for i := 0; i < b.N; i++ {
			f()
		}
	})
}

// parallel64 runs f from 64 goroutines in all.
func parallel64(b *testing.B, f func()) {
	procs := runtime.GOMAXPROCS(0)
	b.SetParallelism((64 + procs - 1) / procs)
	measure(b, func() int64 { return int64(b.N) }, func() {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				f()
			}
		})
	})
}

func cpuNanos(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// measure runs body and reports ids/s and cpu-ns/id for ids IDs (as
// snowflake's benchmarks do).
func measure(b *testing.B, ids func() int64, body func()) {
	b.Helper()
	cpu0, t0 := cpuNanos(b), time.Now()
	b.ResetTimer()
	body()
	b.StopTimer()
	elapsed, cpu := time.Since(t0), cpuNanos(b)-cpu0
	n := ids()
	b.ReportMetric(float64(n)/elapsed.Seconds(), "ids/s")
	b.ReportMetric(float64(cpu)/float64(n), "cpu-ns/id")
}
