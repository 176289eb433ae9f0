package client

import (
	"sync"
	"testing"
	"time"
)

// Item 6: the healthy workers share the picks evenly, wherever the workers
// in backoff sit in the list.
func TestPickIsEvenAmongHealthy(t *testing.T) {
	t.Parallel()
	eps := make([]*endpoint, 10)
	for i := range eps {
		eps[i] = newEndpoint("w"+string(rune('0'+i)), -1, 1)
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

// Other calls put workers into backoff while pick draws: with one worker
// always healthy, pick must always return one (it once counted the healthy,
// then read their health again and could come back with nil).
func TestPickWhileHealthChanges(t *testing.T) {
	t.Parallel()
	eps := make([]*endpoint, 8)
	for i := range eps {
		eps[i] = newEndpoint("w"+string(rune('0'+i)), -1, 1)
	}
	now := time.Now().UnixNano()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			e := eps[1+i%(len(eps)-1)] // eps[0] stays healthy
			if i%2 == 0 {
				e.downUntil.Store(now + int64(time.Hour))
			} else {
				e.downUntil.Store(0)
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	for range 200000 {
		if pick(eps, now, nil) == nil {
			t.Fatal("pick returned nil while a worker was healthy throughout")
		}
	}
}
