package client

import (
	"testing"
	"time"
)

// Item 6: the healthy workers share the picks evenly, wherever the workers
// in backoff sit in the list.
func TestPickIsEvenAmongHealthy(t *testing.T) {
	eps := make([]*endpoint, 10)
	for i := range eps {
		eps[i] = newEndpoint("w"+string(rune('0'+i)), 1)
	}
	now := time.Now().UnixNano()
	for _, e := range eps[:5] { // a run of five in backoff, then five healthy
		e.downUntil.Store(now + int64(time.Hour))
	}
	const n = 20000
	count := map[*endpoint]int{}
	for range n {
		count[pick(eps, now, nil)]++
	}
	for i, e := range eps {
		got := count[e]
		switch {
		case i < 5 && got != 0:
			t.Errorf("worker %d in backoff picked %d times", i, got)
		case i >= 5 && (got < n/5-800 || got > n/5+800):
			t.Errorf("healthy worker %d picked %d of %d times, want about %d", i, got, n, n/5)
		}
	}
}
