package client

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/snowflake/configerr"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	ok := DefaultConfig()
	ok.Static = []string{"127.0.0.1:7609"}
	if err := ok.Validate(); err != nil {
		t.Fatalf("static default config: %v", err)
	}
	zkOK := DefaultConfig()
	zkOK.Servers = []string{"127.0.0.1:2181"}
	if err := zkOK.Validate(); err != nil {
		t.Fatalf("zookeeper default config: %v", err)
	}
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
		want   string // field name and value in the message
		field  string // the ConfigError's Field
	}{
		{"neither", func(c *Config) { c.Static = nil }, "Static", "Servers"},
		{"both", func(c *Config) { c.Servers = []string{"127.0.0.1:2181"} }, "exclusive", "Static"},
		{"bad static", func(c *Config) { c.Static = []string{"127.0.0.1:7609", "nohost"} }, `Static "nohost" is not host:port`, "Static"},
		{"pool", func(c *Config) { c.PoolSize = 0 }, "PoolSize 0", "PoolSize"},
		{"idle", func(c *Config) { c.IdleTimeout = 0 }, "IdleTimeout 0s", "IdleTimeout"},
		{"dial", func(c *Config) { c.DialTimeout = 0 }, "DialTimeout 0s", "DialTimeout"},
		{"request", func(c *Config) { c.RequestTimeout = -time.Second }, "RequestTimeout -1s", "RequestTimeout"},
		{"call", func(c *Config) { c.CallTimeout = 0 }, "CallTimeout 0s", "CallTimeout"},
		{"backoff", func(c *Config) { c.Backoff = 0 }, "Backoff 0s", "Backoff"},
		{"max backoff", func(c *Config) { c.MaxBackoff = time.Millisecond }, "MaxBackoff 1ms", "MaxBackoff"},
	} {
		c := ok
		tc.mutate(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v, want it to name %q", tc.name, err, tc.want)
		}
		var ce *configerr.Error
		if !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("%s: Validate() = %#v, want a *configerr.Error for field %s", tc.name, err, tc.field)
		}
	}
	for _, tc := range []struct {
		mutate func(*Config)
		want   string
	}{
		{func(c *Config) { c.Root = "snowflake" }, `Root "snowflake"`},
		{func(c *Config) { c.Root = "/snowflake/" }, `Root "/snowflake/"`},
		{func(c *Config) { c.SessionTimeout = time.Millisecond }, "SessionTimeout 1ms"},
		{func(c *Config) { c.Servers = []string{"zk"} }, `Servers "zk" is not host:port`},
		// the ZooKeeper rules name this Config's field, not ZKConfig's TLS
		{func(c *Config) { c.ZKTLS.CertFile = "/nonexistent/cert.pem" }, "config ZKTLS.KeyFile"},
	} {
		c := zkOK
		tc.mutate(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate() = %v, want it to name %q", err, tc.want)
		}
	}
}
