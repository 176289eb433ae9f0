package client

import (
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
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
	}{
		{"neither", func(c *Config) { c.Static = nil }, "Static"},
		{"both", func(c *Config) { c.Servers = []string{"127.0.0.1:2181"} }, "exclusive"},
		{"bad static", func(c *Config) { c.Static = []string{"nohost"} }, `Static entry "nohost"`},
		{"pool", func(c *Config) { c.PoolSize = 0 }, "PoolSize 0"},
		{"idle", func(c *Config) { c.IdleTimeout = 0 }, "IdleTimeout 0s"},
		{"dial", func(c *Config) { c.DialTimeout = 0 }, "DialTimeout 0s"},
		{"request", func(c *Config) { c.RequestTimeout = -time.Second }, "RequestTimeout -1s"},
		{"call", func(c *Config) { c.CallTimeout = 0 }, "CallTimeout 0s"},
		{"backoff", func(c *Config) { c.Backoff = 0 }, "Backoff 0s"},
		{"max backoff", func(c *Config) { c.MaxBackoff = time.Millisecond }, "MaxBackoff 1ms"},
	} {
		c := ok
		tc.mutate(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v, want it to name %q", tc.name, err, tc.want)
		}
	}
	for _, tc := range []struct {
		mutate func(*Config)
		want   string
	}{
		{func(c *Config) { c.Root = "snowflake" }, `Root "snowflake"`},
		{func(c *Config) { c.Root = "/snowflake/" }, `Root "/snowflake/"`},
		{func(c *Config) { c.SessionTimeout = time.Millisecond }, "SessionTimeout 1ms"},
		{func(c *Config) { c.Servers = []string{"zk"} }, `Servers entry "zk"`},
	} {
		c := zkOK
		tc.mutate(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate() = %v, want it to name %q", err, tc.want)
		}
	}
}
