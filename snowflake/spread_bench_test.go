package snowflake

import (
	"testing"
	"time"
)

// BenchmarkSequenceStart runs the generator at full load (more asked for
// than the format's 4,096 IDs per ms) with each SequenceStart, side by side
// in one run, and reports the share of the cap reached (of-cap: ids/s over
// 4,096,000): StartSpread must keep it (a millisecond that a request found
// used up is followed by one starting at 0).
func BenchmarkSequenceStart(b *testing.B) {
	for _, mode := range []SequenceStart{StartZero, StartSpread} {
		for _, par := range []struct {
			name string
			n    int
		}{{"1-goroutine", 0}, {"64-goroutines", parallelismFor64(b)}} {
			b.Run(mode.String()+"/"+par.name, func(b *testing.B) {
				cfg := DefaultConfig()
				cfg.Slot, cfg.SequenceStart = Slot{Datacenter: 1, Machine: 2}, mode
				g, err := NewGenerator(cfg)
				if err != nil {
					b.Fatal(err)
				}
				t0 := time.Now()
				measure(b, func() int64 { return int64(b.N) }, func() {
					if par.n == 0 {
						for i := 0; i < b.N; i++ {
							if _, err := g.Next(); err != nil {
								b.Fatal(err)
							}
						}
						return
					}
					b.SetParallelism(par.n)
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							if _, err := g.Next(); err != nil {
								b.Error(err)
								return
							}
						}
					})
				})
				b.ReportMetric(float64(b.N)/time.Since(t0).Seconds()/(float64(MaxBatch)*1000), "of-cap")
			})
		}
	}
}
