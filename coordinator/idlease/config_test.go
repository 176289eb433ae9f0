package idlease

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/coordinator"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/snowflake/configerr"
)

// The config is the coordinator's: its defaults, its checks (named by
// field), and kind embedded, without an advertised address.
func TestEmbeddedConfig(t *testing.T) {
	d := DefaultConfig()
	cd := coordinator.DefaultConfig()
	if d.Kind != zklayout.KindEmbedded || d.Program == "" || d.SessionTimeout != cd.SessionTimeout ||
		d.Horizon != cd.Horizon || d.Datacenter != cd.Datacenter || d.Root != cd.Root {
		t.Fatalf("DefaultConfig %+v: want the coordinator's defaults with kind embedded and a program", d)
	}
	// As the coordinator's: no credentials and not Insecure is refused.
	var ce *configerr.Error
	if err := d.Validate(); !errors.As(err, &ce) || ce.Field != "Insecure" ||
		!strings.Contains(err.Error(), "Auth is empty") || !strings.Contains(err.Error(), "ReadAuthFile") || strings.Contains(err.Error(), "false is false") {
		t.Fatalf("DefaultConfig without credentials: Validate = %v; want a *configerr.Error naming Insecure, saying Auth is empty and how to fill it (#42 item 5)", err)
	}
	// Open says so at once, before dialling anything (#42 item 5).
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if l, err := Open(ctx, d, nil, nil); !errors.As(err, &ce) || ce.Field != "Insecure" {
		if l != nil {
			_ = l.Close()
		}
		t.Fatalf("Open without credentials = %v; want the *configerr.Error naming Insecure", err)
	}
	d.Auth = "app:a-long-enough-secret"
	if err := d.Validate(); err != nil {
		t.Fatalf("DefaultConfig with credentials does not validate: %v", err)
	}
	for _, tc := range []struct {
		field string
		edit  func(*Config)
	}{
		{"Kind", func(c *Config) { c.Kind = zklayout.KindWorker }},
		{"Advertise", func(c *Config) { c.Advertise = "10.0.0.5:7609" }},
		{"Datacenter", func(c *Config) { c.Datacenter = 32 }},
		{"Horizon", func(c *Config) { c.Horizon = c.Renew }},
		{"Program", func(c *Config) { c.Program = "two\nlines" }},
	} {
		c := DefaultConfig()
		c.Auth = "app:a-long-enough-secret"
		tc.edit(&c)
		err := c.Validate()
		var ce *configerr.Error
		if !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("%s: Validate = %v; want a *configerr.Error naming %s", tc.field, err, tc.field)
		}
		if _, err := New(c, nil, nil); err == nil {
			t.Errorf("%s: New accepted the config", tc.field)
		}
	}
	c := DefaultConfig()
	c.Auth = "app:a-long-enough-secret"
	c.Kind, c.Program = "", ""
	if err := c.Validate(); err != nil {
		t.Fatalf("empty kind and program: %v; want them filled", err)
	}
	if w := c.withDefaults(); w.Kind != zklayout.KindEmbedded || w.Program == "" {
		t.Fatalf("withDefaults %q %q", w.Kind, w.Program)
	}
}
