package client

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/snowfleet/snowfleet/integration/faultproxy"
	"github.com/snowfleet/snowfleet/integration/fleettest"
)

// Item 6: a second Close waits for the first to finish: when it returns,
// the worker list is empty and every pool closed.
func TestConcurrentCloseWaits(t *testing.T) {
	zks, _ := startFleet(t, 1)
	proxy := faultproxy.New(t, zks.Addr())
	cfg := DefaultConfig()
	cfg.Servers, cfg.Root, cfg.SessionTimeout = []string{proxy.Addr()}, testRoot, 2*time.Second
	c, _ := newTestClient(t, cfg)
	waitEndpoints(t, c, 1)
	ep := (*c.eps.Load())[0]
	// A session whose ensemble stopped answering makes the first Close take
	// a while (go-zookeeper waits up to 1s for its close request).
	proxy.Blackhole()
	go c.Close()
	if !fleettest.WaitFor(context.Background(), 5*time.Second, c.isClosed) {
		t.Fatal("the first Close never began")
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if got := c.Endpoints(); len(got) != 0 || !ep.closed.Load() {
		t.Errorf("the second Close returned with the worker list %v and its pool open: before the first had finished", got)
	}
}

// Item 6: Close empties the worker list, and the gauge says so.
func TestCloseResetsEndpointsGauge(t *testing.T) {
	w := newStandIn(t)
	c, _ := newCountingClient(t, DefaultConfig(), w)
	if got := value(c.m.endpoints); got != 1 {
		t.Fatalf("snowflake_client_endpoints = %v before Close, want 1", got)
	}
	c.Close()
	if got := value(c.m.endpoints); got != 0 {
		t.Errorf("snowflake_client_endpoints = %v after Close, want 0", got)
	}
}

// Item 6: a call refused for its count is a call that failed.
func TestBadCountIsCountedAsFailure(t *testing.T) {
	w := newStandIn(t)
	c, _ := newCountingClient(t, DefaultConfig(), w)
	if _, err := c.NextN(context.Background(), 0); !errors.Is(err, ErrBadCount) {
		t.Fatalf("NextN(0) = %v, want ErrBadCount", err)
	}
	if got := value(c.m.failures); got != 1 {
		t.Errorf("snowflake_client_failures_total = %v after one NextN(0), want 1", got)
	}
}

// Item 6: two Clients share one Registerer when their ConstLabels differ;
// the same labels twice are refused by name.
func TestClientsShareRegistererWithConstLabels(t *testing.T) {
	w := newStandIn(t)
	reg := prometheus.NewRegistry()
	newClient := func(labels map[string]string) (*Client, error) {
		cfg := DefaultConfig()
		cfg.Static, cfg.ConstLabels = []string{w.addr}, labels
		c, err := New(cfg, nil, reg)
		if err == nil {
			t.Cleanup(func() { c.Close() })
		}
		return c, err
	}
	a, err := newClient(map[string]string{"client": "orders"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := newClient(map[string]string{"client": "users"})
	if err != nil {
		t.Fatalf("a second Client with other ConstLabels on the same Registerer: %v", err)
	}
	if _, err := newClient(map[string]string{"client": "users"}); err == nil {
		t.Error("a third Client with the same ConstLabels registered")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, c := range []*Client{a, b, b} {
		if _, err := c.Next(ctx); err != nil {
			t.Fatal(err)
		}
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		if f.GetName() != "snowflake_client_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			var client, result string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "client":
					client = l.GetValue()
				case "result":
					result = l.GetValue()
				}
			}
			if result == resultOK {
				got[client] = m.GetCounter().GetValue()
			}
		}
	}
	if got["orders"] != 1 || got["users"] != 2 {
		t.Errorf("requests_total{result=ok} by client = %v, want orders 1, users 2", got)
	}
}
