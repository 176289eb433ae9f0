package client

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/snowfleet/snowfleet/snowflake"
)

// TestNextShort: NextShort and NextNShort answer the short forms of the
// IDs Next and NextN would, ascending in byte order; a bad count is
// refused as NextN refuses it.
func TestNextShort(t *testing.T) {
	c, _ := newCountingClient(t, DefaultConfig(), newStandIn(t))
	ctx := context.Background()
	one, err := c.NextShort(ctx)
	if err != nil {
		t.Fatal(err)
	}
	id, err := snowflake.ParseShort(one)
	if err != nil || id <= 0 || len(one) != snowflake.ShortLen {
		t.Fatalf("NextShort = %q (%d, %v), not a short-form ID", one, id, err)
	}
	run, err := c.NextNShort(ctx, 40)
	if err != nil || len(run) != 40 || !slices.IsSorted(run) || run[0] <= one {
		t.Fatalf("NextNShort(40) = %v, %v after %s; want 40 ascending", run, err, one)
	}
	for i, s := range run {
		if got, _ := snowflake.ParseShort(s); got != id+1+int64(i) {
			t.Fatalf("NextNShort(40)[%d] = %s (%d), want the short form of %d", i, s, got, id+1+int64(i))
		}
	}
	if _, err := c.NextNShort(ctx, 0); !errors.Is(err, ErrBadCount) {
		t.Fatalf("NextNShort(0) = %v, want ErrBadCount", err)
	}
}
