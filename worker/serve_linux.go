package worker

import (
	"errors"
	"net"
	"os"
	"syscall"
	"time"
)

// rawWriter writes a goroutine's replies with raw write(2) calls on its TCP
// socket: the socket is non-blocking, so each returns within microseconds,
// and the runtime need not hand this goroutine's P to another thread
// meanwhile (it does that to a syscall longer than ~20µs, which a loopback
// write often is, and on a single core that hand-off costs more than the
// write). A full socket buffer (EAGAIN) waits in the netpoller, under a
// write deadline (goConn.writeRaw).
type rawWriter struct {
	rc syscall.RawConn
	// fn is goConn.writeFd, made once so that writing allocates nothing.
	fn func(uintptr) bool
}

// newRawWriter is nil where nc is not a TCP connection.
func newRawWriter(nc net.Conn, fn func(uintptr) bool) *rawWriter {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return nil
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	return &rawWriter{rc: rc, fn: fn}
}

// writeRaw writes wbuf, and what is left to make of a run, with raw
// write(2) calls. When the socket is full it drops what the socket did
// not take of the last run (conn.shed) and waits for room until
// conn.stallDeadline: WriteTimeout after the socket filled, sooner for a
// connection over its output limit whose socket takes nothing. Only a full
// socket costs a timer, and the deadline is cleared once the write is
// done, so that it never cuts short a later one. The writes are made in
// the netpoller's callback, after it reset the socket's readiness: made
// before, a socket that turned writable between the EAGAIN and the wait
// would never wake it.
func (g *goConn) writeRaw() error {
	c := g.c
	g.out, g.stalledAt, g.wait, g.werr = 0, time.Time{}, false, 0
	err := g.raw.rc.Write(g.raw.fn)
	for err == nil && g.werr == syscall.EAGAIN {
		c.s.turns.done(&g.turn) // not while waiting for a client
		g.wait = true
		if err = g.nc.SetWriteDeadline(c.stallDeadline(g.stalledAt, g.out)); err != nil {
			break
		}
		err = g.raw.rc.Write(g.raw.fn)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			now := time.Now()
			if c.overOutputLimit(now, g.out) {
				c.closedOverLimit(g.out)
				return errOutputLimit
			}
			if now.Before(g.stalledAt.Add(c.s.cfg.WriteTimeout)) {
				err = nil // the socket took some meanwhile: wait again
			}
		}
	}
	if err == nil && !g.stalledAt.IsZero() {
		err = g.nc.SetWriteDeadline(time.Time{})
	}
	if err == nil && g.werr != 0 {
		err = os.NewSyscallError("write", g.werr)
	}
	return err
}

// writeFd is writeRaw's syscall.RawConn callback: it writes wbuf, and the
// chunks refill makes, until all is written or the socket is full; then
// it notes when the socket last took some, drops what it can (conn.shed),
// and asks to wait for room (false) when g.wait.
func (g *goConn) writeFd(fd uintptr) bool {
	c := g.c
	for {
		before := g.out
		g.werr = writeFrom(fd, c.wbuf, &g.out)
		switch g.werr {
		case 0:
			g.out = 0
			if c.refill() {
				continue
			}
			return true
		case syscall.EAGAIN:
		default:
			return true
		}
		now := time.Now()
		if g.stalledAt.IsZero() {
			g.stalledAt, c.stalled, c.taken = now, true, now
		} else if g.out > before {
			c.taken = now
		}
		g.out = c.shed(g.out)
		return !g.wait
	}
}

// unsent is how many bytes the socket holds not sent yet.
func (w *rawWriter) unsent() int {
	n := 0
	_ = w.rc.Control(func(fd uintptr) { n = unsentBytes(fd) })
	return n
}

// readNow is one read of what the socket holds, without waiting (0: none).
func (w *rawWriter) readNow(p []byte) int {
	n := 0
	_ = w.rc.Control(func(fd uintptr) { n, _ = readInto(int(fd), p) })
	return n
}
