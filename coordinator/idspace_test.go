package coordinator

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/snowfleet/snowfleet/snowflake"
)

// Past the last millisecond an ID can carry, Run refuses at once, before
// any ZooKeeper call, with ErrIDSpaceEnded; the gauge says how far past.
// Before it, the gauge counts down to it.
func TestIDSpaceEnd(t *testing.T) {
	clk := &testClock{}
	clk.Shift(time.Duration(snowflake.MaxUnixMs-time.Now().UnixMilli())*time.Millisecond + time.Hour)
	cfg := testConfig("127.0.0.1:1") // nothing listens: no call may be needed
	cfg.Clock = clk
	reg := prometheus.NewRegistry()
	c, err := New(cfg, testLogger(t, "end"), reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Run(ctx); !errors.Is(err, ErrIDSpaceEnded) || ctx.Err() != nil {
		t.Fatalf("Run past the end = %v (ctx %v); want ErrIDSpaceEnded at once", err, ctx.Err())
	}
	if v := gaugeValue(t, reg, "snowflake_coordinator_id_space_remaining_seconds"); v > -3500 || v < -3700 {
		t.Fatalf("id_space_remaining_seconds = %v an hour past the end, want about -3600", v)
	}

	now := prometheus.NewRegistry()
	if _, err := New(testConfig("127.0.0.1:1"), nil, now); err != nil {
		t.Fatal(err)
	}
	want := time.Until(time.UnixMilli(snowflake.MaxUnixMs)).Seconds()
	if v := gaugeValue(t, now, "snowflake_coordinator_id_space_remaining_seconds"); v < want-60 || v > want+60 {
		t.Fatalf("id_space_remaining_seconds = %v, want about %v", v, want)
	}
}

// A reservation near the end stops at the last millisecond an ID can
// carry: the generator takes no ceiling beyond it.
func TestReservationCappedAtIDSpaceEnd(t *testing.T) {
	c, err := New(testConfig("127.0.0.1:1"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	near := snowflake.MaxUnixMs - 100
	if got := c.reservedUntil(near, near); got != snowflake.MaxUnixMs {
		t.Fatalf("reservedUntil(%d) = %d, want the last millisecond %d", near, got, snowflake.MaxUnixMs)
	}
}
