package snowflake

import (
	"errors"
	"fmt"
	"testing"

	"github.com/snowfleet/snowfleet/snowflake/configerr"
)

// Validate's error is found by errors.As through the callers' wrapping, and
// it unwraps to its cause.
func TestConfigErrorAs(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	cfg.Slot.Machine = 40
	_, err := NewGenerator(cfg)
	var ce *configerr.Error
	if !errors.As(fmt.Errorf("outer: %w", err), &ce) || ce.Field != "Slot" || ce.Value != cfg.Slot {
		t.Fatalf("NewGenerator error = %#v, want a *configerr.Error for Slot %v", err, cfg.Slot)
	}
	var re *RangeError
	if !errors.As(err, &re) || re.Field != "machine" || re.Value != 40 {
		t.Fatalf("error %v does not unwrap to the slot's RangeError", err)
	}
}
