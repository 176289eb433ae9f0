package worker

import (
	"fmt"
	"time"

	"github.com/snowfleet/snowfleet/snowflake/configerr"
)

// Config configures a Server.
type Config struct {
	// Listen is the address the ID service listens on, as configured (for
	// INFO and /status; Serve is handed the listener itself).
	Listen string
	// Advertise is the address clients reach this worker at, as published in
	// its lease node (for INFO and /status).
	Advertise string
	// Version is the worker's build, shown by INFO, HELLO and /status.
	Version string
	// MaxConns caps the open client connections; one more is answered
	// "-ERR max number of clients reached" and closed.
	MaxConns int
	// IdleTimeout closes a connection that sent nothing for this long
	// between requests; 0 keeps idle connections open forever.
	IdleTimeout time.Duration
	// ReadTimeout bounds how long a request may take to arrive once its first
	// byte has: a half-written request is dropped after it.
	ReadTimeout time.Duration
	// WriteTimeout bounds each write of replies: a client that stops reading
	// is disconnected after it.
	WriteTimeout time.Duration
	// ClientOutputLimit is Redis's client-output-buffer-limit, in bytes:
	// no request of a connection runs while this much of its replies waits
	// for its socket, the last NEXTIDS reply is made again rather than
	// kept when the socket is full, the kernel keeps about this much unsent
	// (TCP_NOTSENT_LOWAT), and a connection whose socket takes nothing for
	// 2 s while more than this waits is closed (outlimit.go). So a client
	// that does not read costs the worker about this much, not its
	// replies. 0: no limit (each reply is kept whole until written;
	// WriteTimeout alone drops a client that does not read).
	ClientOutputLimit int
	// DrainTimeout bounds Shutdown: requests already received get their
	// replies within it, then every connection is closed.
	DrainTimeout time.Duration
	// NoEventLoop serves each connection from its own goroutine, the
	// portable way, instead of from the epoll loop (Linux only; see
	// loop_linux.go), which answers with a lower tail latency on few cores.
	NoEventLoop bool
	// HTTPMaxConns caps the admin HTTP server's open connections
	// (AdminListener): past it, new ones wait in the kernel's backlog
	// until one closes.
	HTTPMaxConns int
	// HTTPMaxConnsPerAddr caps the admin connections from one remote
	// address: past it, a new one from that address is closed at once, so
	// idle connections from one host cannot keep the probes (kubelet's,
	// Prometheus's) out.
	HTTPMaxConnsPerAddr int
	// HTTPIDsMaxConnsPerAddr caps the connections of IDs over HTTP
	// (IDsListener) from one remote address, as HTTPMaxConnsPerAddr the
	// admin port's: past it (or MaxConns, if lower), a new one from that
	// address is closed at once, so that one host cannot hold MaxConns.
	// A balancer is one address for all its clients: give it room.
	HTTPIDsMaxConnsPerAddr int
	// CloseOnNoLease closes a connection right after it answers -NOLEASE or
	// -CLOCKBACK (no lease, ceiling passed, clock behind, draining), so that
	// a generic client pooled behind an L4 balancer reconnects to a worker
	// that serves instead of being refused on every call. False keeps the
	// connection open, for clients that retry elsewhere by themselves.
	CloseOnNoLease bool
	// ProtectedMode is Redis's protected-mode: while no password is set
	// (SetPasswords), a connection to the ID port from an address other
	// than loopback is answered -DENIED, saying how to fix it, and closed,
	// unless it presented a verified client certificate on the TLS port.
	// A worker started without a password serves only its own host until
	// one is set or this is turned off (for a network nothing untrusted
	// reaches).
	ProtectedMode bool
}

// DefaultConfig listens on :7609 with up to 10,000 connections, a 5-minute
// idle timeout, 10 s to finish a started request or a write, 16 KiB of
// replies waiting per connection, and 5 s to drain; the admin HTTP server
// takes up to 256 connections, 32 from one address; IDs over HTTP up to
// 1,000 from one address; protected mode is on.
func DefaultConfig() Config {
	return Config{
		Listen:                 ":7609",
		MaxConns:               10000,
		IdleTimeout:            5 * time.Minute,
		ReadTimeout:            10 * time.Second,
		WriteTimeout:           10 * time.Second,
		ClientOutputLimit:      16 << 10,
		DrainTimeout:           5 * time.Second,
		HTTPMaxConns:           256,
		HTTPMaxConnsPerAddr:    32,
		HTTPIDsMaxConnsPerAddr: 1000,
		CloseOnNoLease:         true,
		ProtectedMode:          true,
	}
}

// Validate names the first field that is out of range, as a
// *configerr.Error.
func (c Config) Validate() error {
	bad := func(field string, value any, reason string) error {
		return &configerr.Error{Field: field, Value: value, Reason: reason}
	}
	if c.MaxConns < 1 || c.MaxConns > 1_000_000 {
		return bad("MaxConns", c.MaxConns, "is out of range 1..1000000")
	}
	if c.IdleTimeout < 0 {
		return bad("IdleTimeout", c.IdleTimeout, "is negative (0 = never)")
	}
	if c.ReadTimeout <= 0 {
		return bad("ReadTimeout", c.ReadTimeout, "must be positive")
	}
	if c.WriteTimeout <= 0 {
		return bad("WriteTimeout", c.WriteTimeout, "must be positive")
	}
	if c.ClientOutputLimit != 0 && (c.ClientOutputLimit < 1<<10 || c.ClientOutputLimit > 64<<20) {
		return bad("ClientOutputLimit", c.ClientOutputLimit, "is out of range 1024..67108864 bytes (0 = no limit)")
	}
	if c.DrainTimeout <= 0 {
		return bad("DrainTimeout", c.DrainTimeout, "must be positive")
	}
	if c.HTTPMaxConns < 1 || c.HTTPMaxConns > 100_000 {
		return bad("HTTPMaxConns", c.HTTPMaxConns, "is out of range 1..100000")
	}
	if c.HTTPMaxConnsPerAddr < 1 || c.HTTPMaxConnsPerAddr > c.HTTPMaxConns {
		return bad("HTTPMaxConnsPerAddr", c.HTTPMaxConnsPerAddr, fmt.Sprintf("is out of range 1..HTTPMaxConns (%d)", c.HTTPMaxConns))
	}
	if c.HTTPIDsMaxConnsPerAddr < 1 || c.HTTPIDsMaxConnsPerAddr > 1_000_000 {
		return bad("HTTPIDsMaxConnsPerAddr", c.HTTPIDsMaxConnsPerAddr, "is out of range 1..1000000")
	}
	return nil
}
