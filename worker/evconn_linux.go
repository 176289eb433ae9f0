package worker

import (
	"syscall"
	"time"
	"unsafe"
)

// onReadable is the loop's handler for a readable socket: one read, then
// the requests it completed. False: finish the connection.
func (c *conn) onReadable() bool {
	if c.ev.lingering {
		n, errno := c.rawRead(c.rbuf)
		c.ev.lingered += n
		return errno == syscall.EAGAIN || n > 0 && c.ev.lingered < lingerBytes
	}
	n, errno := c.rawRead(c.rbuf[c.w:])
	switch {
	case errno == syscall.EAGAIN:
		return true
	case n == 0:
		return false // EOF or a broken connection
	}
	c.w += n
	c.mark = c.ev.l.now
	c.ready = false
	return c.evStep()
}

// onWritable continues a write the socket was too full for, then the
// requests that waited behind it.
func (c *conn) onWritable() bool {
	if !c.evFlush() {
		return false
	}
	if c.ev.blocked {
		return true
	}
	if c.ev.closing {
		return false
	}
	return c.evStep()
}

func (c *conn) rawRead(p []byte) (int, syscall.Errno) {
	for {
		n, _, errno := syscall.RawSyscall(syscall.SYS_READ, uintptr(c.ev.fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		if errno != syscall.EINTR {
			if errno != 0 {
				n = 0
			}
			return int(n), errno
		}
	}
}

// evStep is serve's inner loop under the epoll loop: execute every complete
// request in rbuf, unless the socket is full, and make room for the next
// read. False: finish the connection once its replies are written.
func (c *conn) evStep() bool {
	ok, protoErr := c.execBuffered()
	if protoErr {
		c.ev.lingerNext = c.flush()
		c.r = c.w
		return false
	}
	if !ok {
		return false
	}
	if !c.flush() {
		return false
	}
	if c.ev.blocked {
		return true
	}
	if c.s.draining.Load() || !c.makeRoom() {
		return false
	}
	if c.r < c.w && !c.partial {
		// A request has started: ReadTimeout runs from now (sweep).
		c.partial = true
		c.rdeadline = c.mark.Add(c.s.cfg.ReadTimeout)
	}
	return true
}

// evFlush writes wbuf without blocking; when the socket is full it leaves
// the rest to EPOLLOUT, under WriteTimeout (sweep). False: broken.
func (c *conn) evFlush() bool {
	if c.ev.fd < 0 {
		return false
	}
	if len(c.wbuf) == 0 {
		return true
	}
	if !c.ev.blocked {
		c.observe(time.Now())
	}
	switch writeFrom(uintptr(c.ev.fd), c.wbuf, &c.ev.out) {
	case 0:
	case syscall.EAGAIN:
		if !c.ev.blocked {
			c.ev.blocked = true
			c.wdeadline = time.Now().Add(c.s.cfg.WriteTimeout)
			return c.ev.l.ctl(syscall.EPOLL_CTL_MOD, c.ev.fd, syscall.EPOLLOUT) == nil
		}
		return true
	default:
		c.ev.blocked = false // broken: finish closes at once
		return false
	}
	c.ev.out = 0
	c.emptyWbuf()
	if c.ev.blocked {
		c.ev.blocked = false
		return c.ev.l.ctl(syscall.EPOLL_CTL_MOD, c.ev.fd, syscall.EPOLLIN) == nil
	}
	return true
}
