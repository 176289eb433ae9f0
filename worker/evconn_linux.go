package worker

import (
	"syscall"
	"time"
)

// evConn is a connection's transport under the epoll loop: what the loop
// keeps per connection besides the protocol state. The loop is one
// goroutine, so none of it is locked.
type evConn struct {
	c  *conn
	l  *loop
	fd int // the socket, non-blocking; -1 once closed

	// out is how much of wbuf was written before the socket filled; while
	// conn.stalled the loop waits for EPOLLOUT instead of EPOLLIN, so a
	// client that does not read its replies is not read from either. The
	// rest must be written by wdeadline.
	out       int
	wdeadline time.Time
	// closing: close once wbuf is written (QUIT, an error reply, a drain);
	// lingerNext: linger (see goConn.linger) instead of closing.
	closing    bool
	lingerNext bool
	// lingering: the write side is shut; input is read and dropped until
	// EOF, lingerBytes or lingerUntil.
	lingering   bool
	lingered    int
	lingerUntil time.Time
}

// onReadable is the loop's handler for a readable socket: one read, then
// the requests it completed. False: finish the connection.
func (e *evConn) onReadable() bool {
	c := e.c
	if e.lingering {
		n, errno := readInto(e.fd, c.rbuf)
		e.lingered += n
		return errno == syscall.EAGAIN || n > 0 && e.lingered < lingerBytes
	}
	n, errno := readInto(e.fd, c.rbuf[c.w:])
	switch {
	case errno == syscall.EAGAIN:
		return true
	case n == 0:
		return false // EOF or a broken connection
	}
	c.received(n, e.l.now)
	return e.step()
}

// onWritable continues a write the socket was too full for, then the
// requests that waited behind it.
func (e *evConn) onWritable() bool {
	if !e.flush() {
		return false
	}
	if e.c.stalled {
		return true
	}
	if e.closing {
		return false
	}
	return e.step()
}

// step is goConn.serve's inner loop under the epoll loop: execute every
// complete request in rbuf, unless the socket is full, and make room for
// the next read; ReadTimeout and IdleTimeout are the loop's sweep's.
// False: finish the connection once its replies are written.
func (e *evConn) step() bool {
	c := e.c
	ok, protoErr := c.execBuffered()
	if protoErr {
		e.lingerNext = e.flush()
		c.r = c.w
		return false
	}
	if !ok || !e.flush() {
		return false
	}
	if c.stalled {
		return true
	}
	return !c.s.draining.Load() && c.prepareRead()
}

// flush writes wbuf without blocking; when the socket is full it leaves
// the rest to EPOLLOUT, under WriteTimeout (sweep). False: broken.
func (e *evConn) flush() bool {
	c := e.c
	if e.fd < 0 {
		return false
	}
	if len(c.wbuf) == 0 {
		return true
	}
	if !c.stalled {
		c.observe(time.Now())
	}
	switch writeFrom(uintptr(e.fd), c.wbuf, &e.out) {
	case 0:
	case syscall.EAGAIN:
		if !c.stalled {
			c.stalled = true
			e.wdeadline = time.Now().Add(c.s.cfg.WriteTimeout)
			return e.l.ctl(syscall.EPOLL_CTL_MOD, e.fd, syscall.EPOLLOUT) == nil
		}
		return true
	default:
		c.stalled = false // broken: finish closes at once
		return false
	}
	e.out = 0
	c.emptyWbuf()
	if c.stalled {
		c.stalled = false
		return e.l.ctl(syscall.EPOLL_CTL_MOD, e.fd, syscall.EPOLLIN) == nil
	}
	return true
}
