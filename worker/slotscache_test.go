package worker

import (
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/coordinator/tree"
)

// /slots and /slots.json read the map (about 1,030 ZooKeeper requests) at
// most once per slotsCacheTTL whatever the request rate: 20 requests at
// once share one read (one per TTL they span, on a loaded machine), and a
// later one after the TTL reads again.
func TestSlotsCached(t *testing.T) {
	zk := startZK(t)
	w := startWorker(t, zk.Addr(), true, nil)
	get := func() time.Time {
		resp, err := http.Get(w.admin.URL + "/slots.json")
		if err != nil {
			t.Error(err)
			return time.Time{}
		}
		defer resp.Body.Close()
		var v tree.SlotMapView
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || v.Error != "" {
			t.Errorf("/slots.json: %v %q", err, v.Error)
		}
		return v.Now
	}
	first := get()
	start := time.Now()
	var (
		mu    sync.Mutex
		reads = map[time.Time]bool{}
		wg    sync.WaitGroup
	)
	// 20, not more: each renders 1,024 slots of indented JSON, and 50 at
	// once under -race starved ZooKeeper's sessions (the lease's too) on
	// two loaded cores, which is not what this test is about.
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := get()
			mu.Lock()
			reads[n] = true
			mu.Unlock()
		}()
	}
	wg.Wait()
	// On a loaded machine the 20 may take longer than the TTL to be
	// served: one read per TTL they spanned, and one more, at most.
	spanned := time.Since(start)
	if most := int(spanned/slotsCacheTTL) + 1; len(reads) > most {
		t.Errorf("20 requests over %v were served from %d reads (%v), want at most %d (one per %v)", spanned, len(reads), reads, most, slotsCacheTTL)
	}
	if spanned < slotsCacheTTL && !reads[first] {
		t.Errorf("20 requests within the TTL were not served the first request's read (%v): %v", first, reads)
	}
	time.Sleep(slotsCacheTTL + 100*time.Millisecond)
	if again := get(); !again.After(first) {
		t.Errorf("after the TTL: the map read at %v, want a read after %v", again, first)
	}
}
