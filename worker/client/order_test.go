package client

import (
	"context"
	"errors"
	"testing"
	"time"
)

// The Go client drops a worker whose IDs stop ascending (#36 item 4): every
// ID must be above the ones the worker returned before the request began,
// on any connection (a fresh connection does not start the count again).
// The repeated ID is never returned to the caller; the worker is backed
// off and counted. Before, the client returned the same ID twice.
func TestRepeatingWorkerDropped(t *testing.T) {
	const id = 1724551110457221119
	cfg := DefaultConfig()
	cfg.Static, cfg.PoolSize = []string{fakeWorker(t, func() int64 { return id })}, 1 // a worker whose IDs stopped ascending
	c, _ := newTestClient(t, cfg)
	call := func() (int64, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return c.Next(ctx)
	}
	if got, err := call(); err != nil || got != id {
		t.Fatalf("first Next: %d, %v; want %d", got, err, id)
	}
	got, err := call()
	var oe *OrderError
	if err == nil || !errors.As(err, &oe) || oe.ID != id || oe.Previous != id {
		t.Fatalf("second Next: %d, %v; want an *OrderError for %d repeated, the ID not returned", got, err, id)
	}
	if n := value(c.m.orderErrors); n < 1 {
		t.Errorf("snowflake_client_order_errors_total %v; want at least 1 (one a retry, each on a fresh connection)", n)
	}
}
