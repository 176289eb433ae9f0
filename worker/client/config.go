package client

import (
	"fmt"
	"net"
	"time"

	"github.com/snowfleet/snowfleet/coordinator"
)

// Config configures a Client. Set either Servers (discovery through
// ZooKeeper) or Static (a fixed list of workers), not both.
type Config struct {
	// Servers are the ZooKeeper servers (host:port each) whose lease nodes
	// list the workers; the list is watched and followed as workers come and
	// go.
	Servers []string
	// Root is the fleet's root znode.
	Root string
	// Auth is "user:password" for ZooKeeper digest auth, or "" to read as the
	// world (the fleet's nodes are world-readable).
	Auth string
	// SessionTimeout is the ZooKeeper session timeout of the discovery
	// session.
	SessionTimeout time.Duration
	// Static is a fixed list of worker addresses (host:port), used instead of
	// ZooKeeper.
	Static []string
	// PoolSize is the most connections kept open to one worker, and so the
	// most calls in flight to it at once; further calls wait for a free one.
	PoolSize int
	// IdleTimeout closes a pooled connection unused for this long instead of
	// reusing it; keep it below the workers' --idle-timeout (default 5m),
	// so that a connection the worker closed is not mistaken for a failing
	// worker.
	IdleTimeout time.Duration
	// DialTimeout bounds opening one connection to a worker.
	DialTimeout time.Duration
	// RequestTimeout bounds one round trip to one worker: a worker slower
	// than this is treated as broken and the call moves on to another.
	RequestTimeout time.Duration
	// CallTimeout bounds a whole call (waiting for a worker, every retry)
	// when the caller's context has no deadline of its own.
	CallTimeout time.Duration
	// Backoff is how long a worker that failed (-NOLEASE, -CLOCKBACK, a
	// broken connection) is left out; it doubles with each consecutive
	// failure, up to MaxBackoff, and resets on a success. Requests under
	// way when it failed count as that one failure. Each backoff is drawn
	// at random from its upper half, and callers waiting for a worker wait
	// up to half a Backoff more, so that they do not return in step.
	Backoff time.Duration
	// MaxBackoff caps the doubled Backoff.
	MaxBackoff time.Duration
	// ConstLabels are added to every metric of this Client, e.g.
	// {"client": "orders"}, so that several Clients can register in one
	// Registerer; nil for none. The metric names stay snowflake_client_*.
	ConstLabels map[string]string
}

// DefaultConfig: root /snowflake, pool of 4 connections per worker idle at
// most 1m, dial timeout 1s, request timeout 1s, call timeout 5s, backoff 250ms doubling up
// to 5s, ZooKeeper session 10s. Servers and Static are left empty.
func DefaultConfig() Config {
	return Config{
		Root:           coordinator.DefaultRoot,
		SessionTimeout: 10 * time.Second,
		PoolSize:       4,
		IdleTimeout:    time.Minute,
		DialTimeout:    time.Second,
		RequestTimeout: time.Second,
		CallTimeout:    5 * time.Second,
		Backoff:        250 * time.Millisecond,
		MaxBackoff:     5 * time.Second,
	}
}

// Validate names the first field that is wrong, and its value.
func (c Config) Validate() error {
	switch {
	case len(c.Servers) == 0 && len(c.Static) == 0:
		return fmt.Errorf("client config: set Servers (ZooKeeper discovery) or Static (worker addresses); both are empty")
	case len(c.Servers) > 0 && len(c.Static) > 0:
		return fmt.Errorf("client config: Servers %q and Static %q are exclusive; set one", c.Servers, c.Static)
	}
	for _, s := range c.Servers {
		if _, _, err := net.SplitHostPort(s); err != nil {
			return fmt.Errorf("client config: Servers entry %q is not host:port: %w", s, err)
		}
	}
	for _, s := range c.Static {
		if _, _, err := net.SplitHostPort(s); err != nil {
			return fmt.Errorf("client config: Static entry %q is not host:port: %w", s, err)
		}
	}
	switch {
	case len(c.Servers) > 0 && !coordinator.ValidRoot(c.Root):
		return fmt.Errorf("client config: Root %q must be an absolute znode path like /snowflake", c.Root)
	case len(c.Servers) > 0 && c.SessionTimeout < 100*time.Millisecond:
		return fmt.Errorf("client config: SessionTimeout %v must be at least 100ms", c.SessionTimeout)
	case c.PoolSize < 1 || c.PoolSize > 1024:
		return fmt.Errorf("client config: PoolSize %d must be in 1..1024", c.PoolSize)
	case c.IdleTimeout <= 0:
		return fmt.Errorf("client config: IdleTimeout %v must be positive", c.IdleTimeout)
	case c.DialTimeout <= 0:
		return fmt.Errorf("client config: DialTimeout %v must be positive", c.DialTimeout)
	case c.RequestTimeout <= 0:
		return fmt.Errorf("client config: RequestTimeout %v must be positive", c.RequestTimeout)
	case c.CallTimeout <= 0:
		return fmt.Errorf("client config: CallTimeout %v must be positive", c.CallTimeout)
	case c.Backoff <= 0:
		return fmt.Errorf("client config: Backoff %v must be positive", c.Backoff)
	case c.MaxBackoff < c.Backoff:
		return fmt.Errorf("client config: MaxBackoff %v must be at least Backoff %v", c.MaxBackoff, c.Backoff)
	}
	if err := checkConstLabels(c.ConstLabels); err != nil {
		return fmt.Errorf("client config: %w", err)
	}
	return nil
}
