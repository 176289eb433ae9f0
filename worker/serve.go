package worker

import (
	"errors"
	"net"
	"os"
	"syscall"
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
	// out, stalledAt, wait and werr are writeRaw's state (serve_linux.go).
	out       int
	stalledAt time.Time
	wait      bool
	werr      syscall.Errno
	// rdeadline is the read deadline in force (zero: none).
	rdeadline time.Time
	// drained: the connection took its last read in a drain;
	// drainedSome: that read brought requests (so it lingers after).
	drained, drainedSome bool
	// turn: it holds one of the server's backlog turns (turns.go).
	turn bool
}

func newGoConn(c *conn, nc net.Conn) *goConn {
	g := &goConn{c: c, nc: nc}
	g.raw = newRawWriter(nc, g.writeFd)
	c.t = g
	c.lazyRuns = g.raw == nil
	return g
}

// serve reads requests, executes them a slice at a time, and writes the
// replies of each slice in one write before it blocks for more input.
func (g *goConn) serve() {
	c := g.c
	defer c.s.turns.done(&g.turn)
	for {
		switch c.execSlice() {
		case sliceLinger:
			g.lingerClose()
			return
		case sliceClose:
			g.flush()
			return
		case sliceMore:
			// A kill is this goroutine's business; other connections are
			// the scheduler's, which it lets run: a goroutine with a
			// backlog would otherwise run slice after slice until it is
			// preempted (10 ms), and 64 pipeliners of NEXTID held a client
			// of single NEXTIDs at p99 190 ms. It waits for a turn
			// (turns.go), behind the other backlogs, as the epoll loop
			// puts a backlog behind the sockets that are ready.
			if !g.flush() || c.s.killed.Load() {
				return
			}
			c.s.turns.done(&g.turn)
			c.s.turns.wait(&g.turn)
			continue
		}
		if !g.flush() {
			return
		}
		c.s.turns.done(&g.turn)
		if !c.prepareRead() {
			g.lingerClose()
			return
		}
		if !g.setReadDeadline() {
			return
		}
		// Checked after the deadline is set: Shutdown sets the flag, then
		// moves every deadline to now, so either this sees the flag or the
		// read below returns at once.
		if c.s.draining.Load() {
			if !g.drainRead() {
				return
			}
			continue
		}
		n, err := g.nc.Read(c.rbuf[c.w:])
		c.received(n, time.Now())
		if err != nil && n == 0 {
			g.readError(err)
			return
		}
	}
}

// drainRead is the last read of a draining connection: what the kernel has
// already received is answered (the loop above runs it), then the
// connection lingers and closes; nothing received: it closes at once.
func (g *goConn) drainRead() bool {
	if g.drained {
		if g.drainedSome {
			g.linger()
		}
		return false
	}
	g.drained = true
	n := g.readNow(g.c.rbuf[g.c.w:])
	if n == 0 {
		return false
	}
	g.drainedSome = true
	g.c.received(n, time.Now())
	return true
}

// readNow reads what the socket holds without waiting for more (0: none).
func (g *goConn) readNow(p []byte) int {
	if g.raw != nil {
		return g.raw.readNow(p)
	}
	// Elsewhere: a read with a deadline just ahead takes what is there.
	if g.nc.SetReadDeadline(time.Now().Add(time.Millisecond)) != nil {
		return 0
	}
	n, _ := g.nc.Read(p)
	return n
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
		g.lingerClose()
		return
	}
	c.timedOut(timeoutIdle)
}

// flush writes the buffered replies, and what is left to make of a run
// (conn.refill). It reports false when the connection is broken, a write
// of replies was not taken within WriteTimeout of the moment the socket
// filled (as under the epoll loop, evConn.flush), or the socket took
// nothing for outputStall while more than the output limit waited: a
// client that stops reading is dropped, a slow one is not.
func (g *goConn) flush() bool {
	c := g.c
	if len(c.wbuf) == 0 && !c.refill() {
		return true
	}
	c.observe(time.Now())
	var err error
	if g.raw != nil {
		err = g.writeRaw()
	} else {
		err = g.writeConn()
	}
	c.stalled = false
	c.emptyWbuf()
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			c.timedOut(timeoutWrite)
		}
		return false
	}
	return true
}

func (g *goConn) unsent() int {
	if g.raw == nil {
		return 0
	}
	return g.raw.unsent()
}

// errOutputLimit: the connection was closed by its output limit (counted).
var errOutputLimit = errors.New("output limit")

// writeConn writes wbuf through net.Conn.Write, which blocks, and a run a
// chunk at a time (lazyRuns); the whole is under WriteTimeout, from now: a
// write cut short by a deadline cannot go on (TLS).
func (g *goConn) writeConn() error {
	c := g.c
	c.s.turns.done(&g.turn) // nc.Write may wait for a client that does not read
	if err := g.nc.SetWriteDeadline(time.Now().Add(c.s.cfg.WriteTimeout)); err != nil {
		return err
	}
	for {
		if _, err := g.nc.Write(c.wbuf); err != nil {
			return err
		}
		if !c.refill() {
			return nil
		}
	}
}

// lingerClose writes the reply that explains a close (a protocol error, a
// read timeout, a refusal) and lingers, so that the client reads it.
func (g *goConn) lingerClose() {
	if g.flush() {
		g.linger()
	}
}

// linger half-closes the connection and reads what the client still sends
// for a moment, so that the error just written reaches it: closing with
// unread input makes the kernel send a reset, and the client may lose the
// reply.
func (g *goConn) linger() {
	g.c.s.turns.done(&g.turn) // it waits for the client
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
