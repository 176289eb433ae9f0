package client

import (
	"crypto/tls"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/snowflake/configerr"
	"github.com/snowfleet/snowfleet/snowflake/tlsfiles"
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
	// ZKTLS names the PEM files for ZooKeeper's secureClientPort, as the
	// workers' --zk-tls-* flags (coordinator.Config.TLS); Servers must then
	// list the secure ports.
	ZKTLS tlsfiles.Files
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
	// DialTimeout bounds opening one connection to a worker, its TLS
	// handshake and AUTH included.
	DialTimeout time.Duration
	// Password is what each connection sends with AUTH when it opens,
	// for workers run with --requirepass-file; "" sends none.
	Password string
	// TLS, when set, makes every connection TLS with this configuration
	// (workers' --tls-listen port; ServerName defaults to the worker's
	// host as discovered); nil: plaintext.
	TLS *tls.Config
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
	// Prefetch, when above 0, turns on the prefetch buffer behind Next: the
	// client fetches runs of Prefetch IDs (NEXTRANGE Prefetch, up to
	// MaxBatch) in the background from every worker at once, two refillers
	// a worker, before the buffer runs dry, and Next hands out an ID from
	// it without a round trip. Next's IDs are then unique but no longer
	// ascending from call to call (runs of several workers interleave), and
	// each is up to MaxStaleness old. NextN and NextRange always ask a
	// worker. 0 (the default) is off.
	Prefetch int
	// MaxStaleness is how old, by this process's clock, a prefetched ID may
	// be when Next hands it out; older ones are dropped, never handed out
	// (snowflake_client_prefetch_dropped_total). It is judged on a coarse
	// clock that a ticker moves every MaxStaleness/16, so that Next reads
	// no clock; k-ordering across clients loosens by this much.
	MaxStaleness time.Duration
	// ConstLabels are added to every metric of this Client, e.g.
	// {"client": "orders"}, so that several Clients can register in one
	// Registerer; nil for none. The metric names stay snowflake_client_*.
	ConstLabels map[string]string
}

// DefaultConfig: root /snowflake, pool of 4 connections per worker idle at
// most 1m, dial timeout 1s, request timeout 1s, call timeout 5s, backoff 250ms doubling up
// to 5s, ZooKeeper session 10s, prefetch off (MaxStaleness 1s once on).
// Servers and Static are left empty.
func DefaultConfig() Config {
	return Config{
		Root:           zklayout.DefaultRoot,
		SessionTimeout: 10 * time.Second,
		PoolSize:       4,
		IdleTimeout:    time.Minute,
		DialTimeout:    time.Second,
		RequestTimeout: time.Second,
		CallTimeout:    5 * time.Second,
		Backoff:        250 * time.Millisecond,
		MaxBackoff:     5 * time.Second,
		MaxStaleness:   time.Second,
	}
}

// Validate names the first field that is wrong, and its value, as a
// *configerr.Error.
func (c Config) Validate() error {
	bad := func(field string, value any, reason string) error {
		return &configerr.Error{Field: field, Value: value, Reason: reason}
	}
	switch {
	case len(c.Servers) == 0 && len(c.Static) == 0:
		return bad("Servers", nil, "empty, and so is Static; set Servers (ZooKeeper discovery) or Static (worker addresses)")
	case len(c.Servers) > 0 && len(c.Static) > 0:
		return bad("Static", c.Static, fmt.Sprintf("and Servers %q are exclusive; set one", c.Servers))
	}
	for _, s := range c.Static {
		if _, _, err := net.SplitHostPort(s); err != nil {
			return &configerr.Error{Field: "Static", Value: s, Reason: "is not host:port", Err: err}
		}
	}
	if len(c.Servers) > 0 {
		if err := c.zk().Validate(); err != nil {
			return configerr.Renamed(err, func(field string) string {
				if strings.HasPrefix(field, "TLS.") {
					return "ZK" + field // ZKTLS.CertFile: this Config's field
				}
				return field
			})
		}
	}
	switch {
	case c.PoolSize < 1 || c.PoolSize > 1024:
		return bad("PoolSize", c.PoolSize, "must be in 1..1024")
	case c.IdleTimeout <= 0:
		return bad("IdleTimeout", c.IdleTimeout, "must be positive")
	case c.DialTimeout <= 0:
		return bad("DialTimeout", c.DialTimeout, "must be positive")
	case c.RequestTimeout <= 0:
		return bad("RequestTimeout", c.RequestTimeout, "must be positive")
	case c.CallTimeout <= 0:
		return bad("CallTimeout", c.CallTimeout, "must be positive")
	case c.Backoff <= 0:
		return bad("Backoff", c.Backoff, "must be positive")
	case c.MaxBackoff < c.Backoff:
		return bad("MaxBackoff", c.MaxBackoff, fmt.Sprintf("must be at least Backoff %v", c.Backoff))
	case c.Prefetch < 0 || c.Prefetch > MaxBatch:
		return bad("Prefetch", c.Prefetch, fmt.Sprintf("must be in 0..%d (0: off)", MaxBatch))
	case c.Prefetch > 0 && c.MaxStaleness < 10*time.Millisecond:
		return bad("MaxStaleness", c.MaxStaleness, "must be at least 10ms with Prefetch on: a younger run could not be handed out")
	}
	return checkConstLabels(c.ConstLabels)
}

// zk is the ZooKeeper side of c, checked and dialled as the workers' is:
// the same rules for the servers, the root, the credentials, TLS and the
// session timeout.
func (c Config) zk() zklayout.ZKConfig {
	return zklayout.ZKConfig{Servers: c.Servers, Root: c.Root, Auth: c.Auth, TLS: c.ZKTLS, SessionTimeout: c.SessionTimeout}
}
