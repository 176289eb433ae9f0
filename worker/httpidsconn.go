package worker

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// The ID port's guards on IDs over HTTP, the way RESP keeps them per
// connection: a connection that has not sent the password is held to
// ReadTimeout (a request's time to arrive) between its requests, not
// IdleTimeout, and the answer to its MaxWrongPasswords-th wrong password
// closes it, as AUTH's does. Protected mode and the limits on sizes are
// the handler's (httpids.go).

// idsConn is one IDs-over-HTTP connection (IDsListener wraps each): what
// it has proved and how many wrong passwords it sent. The handler finds it
// in the request's context (idsConnContext).
type idsConn struct {
	net.Conn // the limitConn
	s        *Server
	// authed: the connection sent a password in force.
	authed atomic.Bool
	wrong  atomic.Int32
	// share is its budget of IDs (fairids.go); one request at a time
	// (HTTP/1.1) uses it.
	share idShare
}

// preAuth reports whether c is held to the short timeout: passwords are in
// force and it has not sent one of them.
func (c *idsConn) preAuth() bool { return !c.authed.Load() && c.s.auth.required() }

// clamp is the read deadline t, or ReadTimeout from now when that comes
// first and c has not authenticated. The HTTP server sets IdleTimeout
// between requests and none while one is served: both pass through here.
func (c *idsConn) clamp(t time.Time) time.Time {
	if !c.preAuth() {
		return t
	}
	if lim := time.Now().Add(c.s.cfg.ReadTimeout); t.IsZero() || t.After(lim) {
		return lim
	}
	return t
}

func (c *idsConn) SetDeadline(t time.Time) error {
	if err := c.Conn.SetWriteDeadline(t); err != nil {
		return err
	}
	return c.Conn.SetReadDeadline(c.clamp(t))
}

func (c *idsConn) SetReadDeadline(t time.Time) error { return c.Conn.SetReadDeadline(c.clamp(t)) }

// wrongPassword counts a wrong password on c and reports whether it was
// the MaxWrongPasswords-th: the answer must close the connection. Counted
// in snowflake_worker_auth_lockouts_total, as RESP's lockouts are.
func (c *idsConn) wrongPassword() bool {
	n := c.wrong.Add(1)
	if n == MaxWrongPasswords {
		c.s.auth.lockouts.Inc()
	}
	return n >= MaxWrongPasswords
}

// idsConnKey is the request context's key of its *idsConn.
type idsConnKey struct{}

// idsConnContext is IDsServer's ConnContext: it puts the connection's
// idsConn (under TLS, the tls.Conn's) in every request's context.
func idsConnContext(ctx context.Context, c net.Conn) context.Context {
	for {
		if ic, ok := c.(*idsConn); ok {
			return context.WithValue(ctx, idsConnKey{}, ic)
		}
		u, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			return ctx
		}
		c = u.NetConn()
	}
}

// idsConnOf is r's connection; a fresh one, whose state lasts the request,
// when IDsHandler is served without IDsServer and IDsListener.
func (s *Server) idsConnOf(r *http.Request) *idsConn {
	if ic, ok := r.Context().Value(idsConnKey{}).(*idsConn); ok {
		return ic
	}
	return &idsConn{s: s}
}

// protectedDeniesRequest is protectedDenies for a request over HTTP: on,
// no password set, from an address other than loopback, and without a
// verified client certificate.
func (s *Server) protectedDeniesRequest(r *http.Request) bool {
	if !s.cfg.ProtectedMode || s.auth.required() {
		return false
	}
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
		return false
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip := net.ParseIP(host)
	return ip == nil || !ip.IsLoopback()
}
