package client

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

// repeater is a RESP server that answers every NEXTID with id: a worker
// whose IDs stopped ascending (restored without recover, say).
func repeater(t *testing.T, id int64) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if strings.HasPrefix(line, "*") || strings.HasPrefix(line, "$") {
						continue // the array and bulk headers of *1 $6 NEXTID
					}
					fmt.Fprintf(c, ":%d\r\n", id)
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// The Go client drops a worker whose IDs stop ascending (#36 item 4): every
// ID must be above the ones the worker returned before the request began,
// on any connection (a fresh connection does not start the count again).
// The repeated ID is never returned to the caller; the worker is backed
// off and counted. Before, the client returned the same ID twice.
func TestRepeatingWorkerDropped(t *testing.T) {
	const id = 1724551110457221119
	cfg := DefaultConfig()
	cfg.Static, cfg.PoolSize = []string{repeater(t, id)}, 1
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
