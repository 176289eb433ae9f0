package snowflake

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestConfigErrorText(t *testing.T) {
	cause := errors.New("missing port")
	for _, tc := range []struct {
		err  *ConfigError
		want string
	}{
		{&ConfigError{Field: "Horizon", Value: time.Second, Reason: "must exceed Renew 1s"}, "config Horizon 1s must exceed Renew 1s"},
		{&ConfigError{Field: "Root", Value: "snowflake", Reason: "is not absolute"}, `config Root "snowflake" is not absolute`},
		{&ConfigError{Field: "Servers", Value: []string{"a", ""}, Reason: "contains an empty address"}, `config Servers ["a" ""] contains an empty address`},
		{&ConfigError{Field: "Servers", Reason: "empty"}, "config Servers: empty"},
		{&ConfigError{Field: "Auth", Err: cause}, "config Auth: missing port"},
		{&ConfigError{Field: "Static", Value: "zk", Reason: "is not host:port", Err: cause}, `config Static "zk" is not host:port: missing port`},
		{&ConfigError{Field: "MaxConns", Value: -1, Reason: "is out of range"}, "config MaxConns -1 is out of range"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}

// Validate's error is found by errors.As through the callers' wrapping, and
// it unwraps to its cause.
func TestConfigErrorAs(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Slot.Machine = 40
	_, err := NewGenerator(cfg)
	var ce *ConfigError
	if !errors.As(fmt.Errorf("outer: %w", err), &ce) || ce.Field != "Slot" || ce.Value != cfg.Slot {
		t.Fatalf("NewGenerator error = %#v, want a *ConfigError for Slot %v", err, cfg.Slot)
	}
	var re *RangeError
	if !errors.As(err, &re) || re.Field != "machine" || re.Value != 40 {
		t.Fatalf("error %v does not unwrap to the slot's RangeError", err)
	}
}
