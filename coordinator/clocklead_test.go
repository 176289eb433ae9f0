package coordinator

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/snowflake"
	"github.com/snowfleet/snowfleet/snowflake/configerr"
)

// A logical clock allowed to lead further than the standby horizon would
// stall its worker as soon as a standby waits (the ceiling is lowered to
// now + standby horizon, never below what was issued): Validate refuses the
// pair, compared as the values in force, naming both fields and values.
func TestValidateClockLeadAboveStandbyHorizon(t *testing.T) {
	// The generator's own rule on its lead is reported under this
	// Config's name for it.
	neg := insecureDefault()
	neg.OnClockBack, neg.MaxClockLead = snowflake.Logical, -time.Second
	var nce *configerr.Error
	if err := neg.Validate(); !errors.As(err, &nce) || nce.Field != "MaxClockLead" {
		t.Fatalf("MaxClockLead -1s: Validate() = %v, want a ConfigError on MaxClockLead", err)
	}

	cfg := insecureDefault()
	cfg.StandbyHorizon = 3 * time.Second // the default lead, 5s, is above it
	err := cfg.Validate()
	var ce *configerr.Error
	if !errors.As(err, &ce) || ce.Field != "MaxClockLead" {
		t.Fatalf("lead 5s, standby horizon 3s: Validate() = %v, want a ConfigError on MaxClockLead", err)
	}
	for _, want := range []string{"MaxClockLead 5s", "StandbyHorizon 3s"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %q, want it to name %q", err, want)
		}
	}

	for name, mod := range map[string]func(*Config){
		"defaults":                      func(*Config) {},
		"lead equal to standby":         func(c *Config) { c.MaxClockLead = c.StandbyHorizon },
		"lead and standby both lowered": func(c *Config) { c.StandbyHorizon, c.MaxClockLead = 2*time.Second, 2*time.Second },
		// In force both are min(x, Horizon) = 4s.
		"a horizon below both": func(c *Config) { c.Horizon, c.MaxClockLead = 4*time.Second, 10*time.Second },
		// 0: never shorten, so the standby horizon in force is Horizon.
		"never shorten":      func(c *Config) { c.StandbyHorizon, c.MaxClockLead = 0, 30*time.Second },
		"refuse has no lead": func(c *Config) { c.OnClockBack, c.StandbyHorizon = snowflake.Refuse, 2*time.Second },
	} {
		cfg := insecureDefault()
		mod(&cfg)
		if err := cfg.Validate(); err != nil {
			t.Errorf("%s: %v, want valid", name, err)
		}
	}
	cfg = insecureDefault()
	cfg.Horizon, cfg.StandbyHorizon, cfg.MaxClockLead = 8*time.Second, 5*time.Second, 10*time.Second
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "a lead of 8s against 5s") {
		t.Errorf("lead 10s (8s in force) against standby horizon 5s: %v, want refused with the values in force", err)
	}
}
