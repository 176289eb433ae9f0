package worker

import "testing"

// BenchmarkNextRange4096: one connection, NEXTRANGE 4096 one at a time, as
// BenchmarkNextIDs4096/c1 asks NEXTIDS 4096: the same IDs, a reply of 3
// lines instead of 4,097.
func BenchmarkNextRange4096(b *testing.B) {
	w := benchWorker(b)
	b.Run("c1", func(b *testing.B) {
		rate := roundTrips(b, w, 1, "*2\r\n$9\r\nNEXTRANGE\r\n$4\r\n4096\r\n", 1, 3)
		b.ReportMetric(rate*4096, "ids/s")
	})
}
