package resp

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// naiveRun is what AppendIntRun must produce: strconv for every integer.
func naiveRun(dst []byte, first int64, n int) []byte {
	for i := range int64(n) {
		dst = append(dst, ':')
		dst = strconv.AppendInt(dst, first+i, 10)
		dst = append(dst, '\r', '\n')
	}
	return dst
}

// naiveBulkRun is what AppendBulkIntRun must produce.
func naiveBulkRun(dst []byte, first int64, n int) []byte {
	for i := range int64(n) {
		digits := strconv.FormatInt(first+i, 10)
		dst = append(dst, '$')
		dst = strconv.AppendInt(dst, int64(len(digits)), 10)
		dst = append(dst, '\r', '\n')
		dst = append(dst, digits...)
		dst = append(dst, '\r', '\n')
	}
	return dst
}

func TestAppendIntRun(t *testing.T) {
	t.Parallel()
	cases := []struct {
		first int64
		n     int
	}{
		{0, 1}, {0, 4096}, {7, 5}, {9, 1}, {9, 2}, {90, 10}, {90, 11}, {95, 10}, {999, 3}, {998, 4096},
		{9_999_999, 4096}, {1724551110457221119 - 4095, 4096},
		{1724551110457217023, 4096}, {1_099_999_999_999_999_998, 3},
		{math.MaxInt64 - 4095, 4096}, {math.MaxInt64, 1},
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		cases = append(cases, struct {
			first int64
			n     int
		}{r.Int64N(math.MaxInt64 - 4096), 1 + r.IntN(4096)})
	}
	for _, tc := range cases {
		prefix := []byte("*9\r\n")
		got := AppendIntRun(append([]byte(nil), prefix...), tc.first, tc.n)
		want := naiveRun(append([]byte(nil), prefix...), tc.first, tc.n)
		if string(got) != string(want) {
			t.Fatalf("AppendIntRun(%d, %d): differs from strconv at byte %d", tc.first, tc.n, firstDiff(got, want))
		}
		got = AppendBulkIntRun(append([]byte(nil), prefix...), tc.first, tc.n)
		want = naiveBulkRun(append([]byte(nil), prefix...), tc.first, tc.n)
		if string(got) != string(want) {
			t.Fatalf("AppendBulkIntRun(%d, %d): differs from strconv at byte %d", tc.first, tc.n, firstDiff(got, want))
		}
	}
	if got := AppendIntRun([]byte("x"), 5, 0); string(got) != "x" {
		t.Fatalf("AppendIntRun with n=0 appended %q", got[1:])
	}
	if got := AppendBulkIntRun([]byte("x"), 5, 0); string(got) != "x" {
		t.Fatalf("AppendBulkIntRun with n=0 appended %q", got[1:])
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// BenchmarkAppendIntRun: a NEXTIDS 4096 reply body, against strconv per ID.
func BenchmarkAppendIntRun(b *testing.B) {
	const first = 1724551110457217023
	buf := make([]byte, 0, 4096*26)
	b.Run("run", func(b *testing.B) {
		for range b.N {
			buf = AppendIntRun(buf[:0], first, 4096)
		}
	})
	b.Run("bulk", func(b *testing.B) {
		for range b.N {
			buf = AppendBulkIntRun(buf[:0], first, 4096)
		}
	})
	b.Run("strconv", func(b *testing.B) {
		for range b.N {
			buf = naiveRun(buf[:0], first, 4096)
		}
	})
}
