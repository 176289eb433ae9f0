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
	// queued: in the loop's run queue, with complete requests left after
	// its slice; parkedUntil (non-zero): its ID request waits for the
	// generator until then. Either way it is busy: not read from until
	// its backlog is done.
	queued      bool
	parkedUntil time.Time
	// small: parked for a light request, counted in idFair.lightWaiting;
	// heavyDue: queued by unpark for a heavy one (see loop.fullUntil).
	small, heavyDue bool
	// hot: it had a backlog (queued or parked) since its socket last had
	// nothing to read; readNext: queued to read in its turn (step).
	hot, readNext bool
	// drained: it took its last read in a drain.
	drained bool
	// armed is what the epoll set waits for on the socket (watch).
	armed uint32
}

// watch sets what the loop waits for on the socket: EPOLLIN for requests,
// EPOLLOUT while a write waits for room, nothing while the connection is
// busy with a backlog (queued or parked). The set is level-triggered: a
// socket that stays readable while the loop does not read it (a client
// pipelining NEXTIDS 4096 by the hundred) would make every epoll_wait
// return at once, and the loop would spin until the parked request is
// due, taking the CPU from everyone else. An epoll_ctl only when it
// changes: a connection that never has a backlog pays none.
func (e *evConn) watch(ev uint32) bool {
	if e.armed == ev {
		return true
	}
	e.armed = ev
	return e.l.ctl(syscall.EPOLL_CTL_MOD, e.fd, ev) == nil
}

// busy: the connection has work of its own (a backlog, a parked request,
// a write the socket has not taken yet, a linger) and finishes it before
// it looks at a drain.
func (e *evConn) busy() bool {
	return e.queued || !e.parkedUntil.IsZero() || e.c.stalled || e.lingering
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

// step is goConn.serve's inner loop under the epoll loop: one slice of
// the complete requests in rbuf, its replies written (or left to
// EPOLLOUT), and then, if requests are left, a place in the run queue, or
// in the parked list while an ID request waits for the generator; if none
// is left, room for the next read. ReadTimeout and IdleTimeout are the
// loop's sweep's. False: finish the connection once its replies are
// written.
func (e *evConn) step() bool {
	c := e.c
	end := c.execSlice()
	switch end {
	case sliceLinger:
		e.lingerNext = e.flush()
		c.r = c.w
		return false
	case sliceClose:
		e.flush()
		return false
	}
	if !e.flush() {
		return false
	}
	switch {
	case c.stalled:
		// onWritable steps again once the socket took the replies.
	case end == sliceMore:
		e.hot = true
		e.l.queue(e)
		return e.watch(0)
	case end == sliceWait:
		e.hot = true
		e.l.park(e, c.retry)
		return e.watch(0)
	case e.hot && !c.s.draining.Load():
		// A pipeliner that has used up what it sent reads again in its
		// turn in the run queue, not through the epoll set: 256 of them
		// became readable together, and the client of one request that
		// arrived among them waited for all their reads and slices.
		if !c.prepareRead() {
			e.lingerNext = e.flush()
			return false
		}
		e.readNext = true
		e.l.queue(e)
		return e.watch(0)
	default:
		return e.idle()
	}
	return true
}

// readAgain is a hot connection's read in its turn: what the client sent
// meanwhile, or, with nothing there, back to the epoll set as an idle
// connection. False: finish the connection.
func (e *evConn) readAgain() bool {
	e.readNext = false
	c := e.c
	n, errno := readInto(e.fd, c.rbuf[c.w:])
	switch {
	case errno == syscall.EAGAIN:
		e.hot = false
		return e.idle()
	case n == 0:
		return false // EOF or a broken connection
	}
	c.received(n, e.l.now)
	return e.step()
}

// idle is a connection with no complete request left: it makes room for
// the next read. In a drain it reads once more instead, without waiting,
// to answer what the kernel has received already, then closes, lingering
// if that read brought anything. False: finish the connection.
func (e *evConn) idle() bool {
	c := e.c
	if !c.prepareRead() {
		e.lingerNext = e.flush() // the request could not fit: answered
		return false
	}
	if !e.watch(syscall.EPOLLIN) {
		return false
	}
	if !c.s.draining.Load() {
		return true
	}
	if e.drained {
		return false
	}
	e.drained = true
	n, _ := readInto(e.fd, c.rbuf[c.w:])
	if n == 0 {
		return false
	}
	e.lingerNext = true
	c.received(n, time.Now())
	return e.step()
}

func (e *evConn) unsent() int {
	if e.fd < 0 {
		return 0
	}
	return unsentBytes(uintptr(e.fd))
}

// flush writes wbuf without blocking, and what is left to make of a run
// dropped from it (conn.refill); when the socket is full it drops what
// the socket did not take of the last run (conn.shed) and leaves the rest
// to EPOLLOUT, under WriteTimeout and the output limit (sweep). False:
// broken.
func (e *evConn) flush() bool {
	c := e.c
	if e.fd < 0 {
		return false
	}
	if len(c.wbuf) == 0 && !c.refill() {
		return true
	}
	if !c.stalled {
		c.observe(time.Now())
	}
	for {
		before := e.out
		switch writeFrom(uintptr(e.fd), c.wbuf, &e.out) {
		case 0:
			e.out = 0
			if c.refill() {
				continue
			}
		case syscall.EAGAIN:
			now := time.Now()
			if c.stalled && e.out > before {
				c.taken = now
			}
			e.out = c.shed(e.out)
			if !c.stalled {
				c.stalled, c.taken = true, now
				e.wdeadline = now.Add(c.s.cfg.WriteTimeout)
				return e.watch(syscall.EPOLLOUT)
			}
			return true
		default:
			c.stalled = false // broken: finish closes at once
			return false
		}
		break
	}
	c.emptyWbuf()
	if c.stalled {
		c.stalled = false
		return e.watch(syscall.EPOLLIN)
	}
	return true
}
