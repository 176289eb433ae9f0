package worker

import (
	"errors"
	"net"
	"os"
	"time"
)

// goConn is the portable transport: one goroutine per connection, blocking
// reads and writes under the socket's deadlines.
type goConn struct {
	c  *conn
	nc net.Conn
	// raw writes replies with write(2) itself where it can (Linux TCP;
	// nil: nc.Write); see serve_linux.go.
	raw *rawWriter
	// rdeadline is the read deadline in force (zero: none).
	rdeadline time.Time
	// wdeadline is the write deadline in force; it is pushed forward once
	// less than half of WriteTimeout is left, not on every write.
	wdeadline time.Time
}

func newGoConn(c *conn, nc net.Conn) *goConn {
	g := &goConn{c: c, nc: nc, raw: newRawWriter(nc)}
	c.t = g
	return g
}

// serve reads requests, executes every complete one in the buffer, and
// writes the replies in one write before it blocks for more input.
func (g *goConn) serve() {
	c := g.c
	for {
		ok, protoErr := c.execBuffered()
		if protoErr {
			if g.flush() {
				g.linger()
			}
			return
		}
		if !ok {
			return
		}
		if len(c.wbuf) > 0 && !g.flush() {
			return
		}
		if !c.prepareRead() || !g.setReadDeadline() {
			return
		}
		// Checked after the deadline is set: Shutdown sets the flag, then
		// moves every deadline to now, so either this sees the flag or the
		// read below returns at once.
		if c.s.draining.Load() {
			return
		}
		n, err := g.nc.Read(c.rbuf[c.w:])
		c.received(n, time.Now())
		if err != nil && n == 0 {
			g.readError(err)
			return
		}
	}
}

// setReadDeadline arms the deadline of the next read (conn.readDeadline).
// The idle deadline is pushed forward only once it has moved by a
// sixteenth of the timeout, not on every request: a timer update costs more
// than a request.
func (g *goConn) setReadDeadline() bool {
	d, kind := g.c.readDeadline()
	switch {
	case d.Equal(g.rdeadline):
		return true
	case kind == timeoutIdle && !d.IsZero():
		idle := g.c.s.cfg.IdleTimeout
		if !g.rdeadline.After(d) && g.rdeadline.After(d.Add(-idle/16)) {
			return true
		}
	}
	g.rdeadline = d
	return g.nc.SetReadDeadline(d) == nil
}

func (g *goConn) readError(err error) {
	c := g.c
	if !errors.Is(err, os.ErrDeadlineExceeded) || c.s.draining.Load() {
		return
	}
	if c.partial {
		c.timedOut(timeoutRead)
		g.flush()
		return
	}
	c.timedOut(timeoutIdle)
}

// flush writes the buffered replies. It reports false when the connection
// is broken or the client stopped reading for WriteTimeout.
func (g *goConn) flush() bool {
	c := g.c
	if len(c.wbuf) == 0 {
		return true
	}
	now := time.Now()
	c.observe(now)
	if g.wdeadline.Sub(now) < c.s.cfg.WriteTimeout/2 {
		g.wdeadline = now.Add(c.s.cfg.WriteTimeout)
		if err := g.nc.SetWriteDeadline(g.wdeadline); err != nil {
			return false
		}
	}
	var err error
	if g.raw != nil {
		err = g.raw.write(c.wbuf)
	} else {
		_, err = g.nc.Write(c.wbuf)
	}
	c.emptyWbuf()
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			c.timedOut(timeoutWrite)
		}
		return false
	}
	return true
}

// linger half-closes the connection and reads what the client still sends
// for a moment, so that the error just written reaches it: closing with
// unread input makes the kernel send a reset, and the client may lose the
// reply.
func (g *goConn) linger() {
	tc, ok := g.nc.(*net.TCPConn)
	if !ok || tc.CloseWrite() != nil {
		return
	}
	_ = g.nc.SetReadDeadline(time.Now().Add(lingerTime))
	for total := 0; total < lingerBytes; {
		n, err := g.nc.Read(g.c.rbuf)
		total += n
		if err != nil {
			return
		}
	}
}
