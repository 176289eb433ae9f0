package snowflake

import (
	"testing"
	"time"
)

// SystemClock reads the wall clock by the cheapest means the platform has;
// it must agree with time.Now to within its microsecond resolution (plus
// the time between the reads).
func TestSystemClockIsTheWallClock(t *testing.T) {
	t.Parallel()
	for range 1000 {
		before := time.Now().UnixNano()
		got := SystemClock{}.UnixNano()
		after := time.Now().UnixNano()
		if got < before-int64(time.Microsecond) || got > after {
			t.Fatalf("SystemClock.UnixNano() = %d, outside time.Now's [%d, %d]", got, before, after)
		}
	}
}
