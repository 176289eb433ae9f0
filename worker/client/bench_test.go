package client

import (
	"context"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/integration/fleettest"
	"github.com/snowfleet/snowfleet/integration/zktest"
)

// benchClient runs one real worker and a client of it.
func benchClient(b *testing.B, pool int) *Client {
	b.Helper()
	zks := zktest.Start(b)
	w := fleettest.Start(b, fleettest.Options{ZK: zks.Addr(), Root: testRoot})
	w.WaitReady(20 * time.Second)
	cfg := DefaultConfig()
	cfg.Static, cfg.PoolSize = []string{w.Addr}, pool
	c, err := New(cfg, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

// BenchmarkNext is one NEXTID round trip per op, from parallel callers
// over a pool of 8 connections
// (16 callers on 2 cores).
func BenchmarkNext(b *testing.B) {
	c := benchClient(b, 8)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	b.ReportAllocs()
	b.SetParallelism(8) // 8 callers per core: the pool of 8 is kept busy
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Next(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkNextN100 is one NEXTIDS 100 per op; ids/s is the figure to
// compare with BenchmarkNext.
func BenchmarkNextN100(b *testing.B) {
	c := benchClient(b, 8)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	b.ReportAllocs()
	b.SetParallelism(8)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.NextN(ctx, 100); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)*100/time.Since(start).Seconds(), "ids/s")
}
