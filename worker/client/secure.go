package client

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"

	"github.com/snowfleet/snowfleet/worker/resp"
)

// DialOptions are how a connection reaches a worker that asks for a
// password (--requirepass-file) or speaks TLS (--tls-listen).
type DialOptions struct {
	// Password is sent with AUTH right after connecting; "" sends none.
	Password string
	// TLS, when set, wraps the connection in TLS with this configuration
	// (ServerName defaults to the address's host); nil: plaintext.
	TLS *tls.Config
}

// DialWith connects to a worker at addr, does the TLS handshake and AUTH
// that opts ask for, and returns the ready connection; ctx bounds all of
// it. A refused password is a *ReplyError with Code "WRONGPASS", which
// retrying will not cure.
func DialWith(ctx context.Context, addr string, opts DialOptions) (*Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dial worker %s: %w", addr, err)
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	if opts.TLS != nil {
		cfg := opts.TLS.Clone()
		if cfg.ServerName == "" {
			cfg.ServerName, _, _ = net.SplitHostPort(addr)
		}
		tc := tls.Client(nc, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, fmt.Errorf("tls handshake with worker %s: %w", addr, err)
		}
		nc = tc
	}
	c := newConn(addr, nc)
	if opts.Password != "" {
		if err := c.auth(ctx, opts.Password); err != nil {
			nc.Close()
			return nil, err
		}
	}
	return c, nil
}

// auth sends AUTH password and reads +OK.
func (c *Conn) auth(ctx context.Context, password string) error {
	if d, ok := ctx.Deadline(); ok {
		_ = c.nc.SetDeadline(d)
		defer func() { _ = c.nc.SetDeadline(noDeadline) }()
	}
	c.wbuf = resp.AppendArrayHeader(c.wbuf, 2)
	c.wbuf = resp.AppendBulkString(c.wbuf, "AUTH")
	c.wbuf = resp.AppendBulkString(c.wbuf, password)
	err := c.Flush()
	// The password must not linger in the buffer the Conn reuses.
	clear(c.wbuf[:cap(c.wbuf)])
	if err != nil {
		return err
	}
	line, err := c.readLine()
	switch {
	case err != nil:
		return err
	case line[0] == '-':
		return c.replyError(line[1:])
	case string(line) != "+OK":
		return c.protocol("AUTH answered %q, not +OK", line)
	}
	return nil
}
