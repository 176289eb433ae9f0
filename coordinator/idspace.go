package coordinator

import (
	"errors"
	"fmt"
	"time"

	"github.com/snowfleet/snowfleet/snowflake"
)

// ErrIDSpaceEnded: the clock is past the last millisecond an ID's 41-bit
// timestamp can carry (snowflake.MaxUnixMs, 2080-07-10): no ID can be
// issued, so Run refuses to claim. Not retried: only a new layout helps.
var ErrIDSpaceEnded = errors.New("the ID space has ended: the clock is past the last millisecond an ID can carry")

// idSpaceLeft is the time from our clock to the last millisecond an ID can
// carry (negative once past it), for the gauge and the alert a year ahead.
func (c *Coordinator) idSpaceLeft() time.Duration {
	return time.Duration(snowflake.MaxUnixMs-c.nowMs()) * time.Millisecond
}

// checkIDSpace refuses a claim once the ID space has ended.
func (c *Coordinator) checkIDSpace() error {
	if c.idSpaceLeft() >= 0 {
		return nil
	}
	return fmt.Errorf("%w: the clock says %s, the last is %s (a clock set wrong, or a new ID layout is due)",
		ErrIDSpaceEnded, time.UnixMilli(c.nowMs()).UTC().Format(time.RFC3339),
		time.UnixMilli(snowflake.MaxUnixMs).UTC().Format(time.RFC3339Nano))
}
