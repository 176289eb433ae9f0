package worker

import (
	"errors"
	"net"
	"os"
	"syscall"
	"time"
	"unsafe"

	"github.com/snowfleet/snowfleet/worker/resp"
)

const (
	// readBufSize and writeBufSize are a connection's starting buffers:
	// small, so that thousands of idle connections cost little. The read
	// buffer grows (doubling, up to MaxFrame) only while one request does
	// not fit; the write buffer grows to hold a NEXTIDS reply.
	readBufSize  = 4 << 10
	writeBufSize = 4 << 10
	// flushAt is how much reply a pipeline may buffer before it is written
	// even though more requests are waiting.
	flushAt = 64 << 10
	// keepWriteBuf is the largest write buffer kept between requests; one
	// NEXTIDS 4096 reply (about 90 KiB) fits, so a batching client does not
	// reallocate per request.
	keepWriteBuf = 128 << 10
	// lingerTime and lingerBytes bound how long and how much a connection
	// closed for a protocol error is read from, so its error is delivered.
	lingerTime  = 250 * time.Millisecond
	lingerBytes = 1 << 20
)

// conn is one client connection, served by one goroutine.
type conn struct {
	s  *Server
	nc net.Conn
	id int64

	rbuf []byte // requests are rbuf[r:w]
	r, w int
	p    parser
	argv [][]byte
	wbuf []byte
	// partial is set while a started request waits for its remaining bytes,
	// under the read timeout.
	partial bool
	// rdeadline is the read deadline in force (zero: none).
	rdeadline time.Time
	// wdeadline is the write deadline in force; it is pushed forward once
	// less than half of WriteTimeout is left, not on every write.
	wdeadline time.Time

	// mark is when the last read returned: the requests it brought are
	// timed from it to their reply written.
	mark time.Time
	// pending counts, by cmdKind, the requests whose replies wait in wbuf.
	pending []uint32
	// ready caches the lease's Ready for the requests of one read.
	ready bool

	// rc is the raw TCP connection replies are written through (nil: use
	// nc.Write); writeFn is the rawWrite method value, made once so that
	// writing allocates nothing; wrote and werr are its results.
	rc      syscall.RawConn
	writeFn func(uintptr) bool
	wrote   int
	werr    syscall.Errno

	name    string
	scratch [64]byte

	// ev is the connection's state under the epoll loop (loop_linux.go);
	// ev.l nil means it is served by its own goroutine (serve).
	ev evState
}

func newConn(s *Server, nc net.Conn, id int64) *conn {
	c := &conn{
		s: s, nc: nc, id: id,
		rbuf:    make([]byte, readBufSize),
		p:       newParser(),
		argv:    make([][]byte, 0, 8),
		wbuf:    make([]byte, 0, writeBufSize),
		pending: make([]uint32, len(s.cmds)),
		ev:      evState{fd: -1},
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		if rc, err := tc.SyscallConn(); err == nil {
			c.rc, c.writeFn = rc, c.rawWrite
		}
	}
	return c
}

// write writes wbuf whole. On TCP the write(2) is a raw syscall: the socket
// is non-blocking, so it returns within microseconds, and the runtime need
// not hand this goroutine's P to another thread meanwhile (it does that to a
// syscall longer than ~20µs, which a loopback write often is, and on a
// single core that hand-off costs more than the write). A full socket
// buffer (EAGAIN) waits in the netpoller, under the write deadline.
func (c *conn) write() error {
	if c.rc == nil {
		_, err := c.nc.Write(c.wbuf)
		return err
	}
	c.wrote, c.werr = 0, 0
	if err := c.rc.Write(c.writeFn); err != nil {
		return err
	}
	if c.werr != 0 {
		return os.NewSyscallError("write", c.werr)
	}
	return nil
}

// rawWrite is write's syscall.RawConn callback: false means "wait until the
// socket is writable, then call again".
func (c *conn) rawWrite(fd uintptr) bool {
	c.werr = writeFrom(fd, c.wbuf, &c.wrote)
	return c.werr != syscall.EAGAIN
}

// writeFrom writes p[*off:] to the non-blocking socket fd with raw write(2)
// calls, advancing *off. It returns 0 once all is written, EAGAIN when the
// socket is full, or the error that broke it.
func writeFrom(fd uintptr, p []byte, off *int) syscall.Errno {
	for *off < len(p) {
		rest := p[*off:]
		n, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&rest[0])), uintptr(len(rest)))
		switch errno {
		case 0:
			*off += int(n)
		case syscall.EINTR:
		default:
			return errno
		}
	}
	return 0
}

// serve reads requests, executes every complete one in the buffer, and
// writes the replies in one write before it blocks for more input.
func (c *conn) serve() {
	for {
		ok, protoErr := c.execBuffered()
		if protoErr {
			if c.flush() {
				c.linger()
			}
			return
		}
		if !ok {
			return
		}
		if len(c.wbuf) > 0 && !c.flush() {
			return
		}
		if !c.makeRoom() {
			return
		}
		if !c.setReadDeadline() {
			return
		}
		// Checked after the deadline is set: Shutdown sets the flag, then
		// moves every deadline to now, so either this sees the flag or the
		// read below returns at once.
		if c.s.draining.Load() {
			return
		}
		n, err := c.nc.Read(c.rbuf[c.w:])
		c.w += n
		c.mark = time.Now()
		c.ready = false
		if err != nil && n == 0 {
			c.readError(err)
			return
		}
	}
}

// execBuffered executes the complete requests in rbuf in order, flushing
// whenever wbuf fills, until none is left or (event loop) a write blocked.
// It returns false when the connection must close: after QUIT, a broken
// write or a protocol error, which it answers and reports in protoErr so
// the caller can linger its own way.
func (c *conn) execBuffered() (ok, protoErr bool) {
	for !c.ev.blocked && c.r < c.w {
		frame := c.rbuf[c.r:c.w]
		n, err := c.p.parse(frame)
		if err != nil {
			c.s.m.protoErrs.Inc()
			c.s.log.Debug("closing connection on a protocol error", "remote", c.nc.RemoteAddr(), "error", err)
			c.wbuf = resp.AppendError(c.wbuf, "ERR "+err.Error())
			return false, true
		}
		if n == 0 {
			break
		}
		c.argv = c.p.args(frame, c.argv)
		c.p.reset()
		c.r += n
		c.partial = false
		if len(c.argv) == 0 {
			continue
		}
		if !c.exec(c.argv) {
			c.flush()
			return false, false
		}
		if len(c.wbuf) >= flushAt && !c.flush() {
			return false, false
		}
	}
	return true, false
}

// makeRoom moves a partial request to the front of the buffer, or grows the
// buffer when the request fills all of it; an empty oversized buffer shrinks.
func (c *conn) makeRoom() bool {
	if c.r == c.w {
		c.r, c.w = 0, 0
		if len(c.rbuf) > readBufSize {
			c.rbuf = make([]byte, readBufSize)
		}
		return true
	}
	if c.w < len(c.rbuf) {
		return true
	}
	if c.r > 0 {
		copy(c.rbuf, c.rbuf[c.r:c.w])
		c.w -= c.r
		c.r = 0
		return true
	}
	if len(c.rbuf) >= MaxFrame {
		// The parser refuses any request larger than MaxFrame before it
		// fills the buffer; this is a second line.
		c.s.m.protoErrs.Inc()
		c.wbuf = resp.AppendError(c.wbuf, "ERR "+errBigFrame.Error())
		c.flush()
		return false
	}
	nb := make([]byte, min(2*len(c.rbuf), MaxFrame))
	copy(nb, c.rbuf[:c.w])
	c.rbuf = nb
	return true
}

// setReadDeadline arms the deadline of the next read: ReadTimeout from the
// start of a half-received request, else IdleTimeout. The idle deadline is
// pushed forward only once it has moved by a sixteenth of the timeout, not on
// every request (a timer update costs more than a request); the clock it uses
// is the time of the last read.
func (c *conn) setReadDeadline() bool {
	var d time.Time
	idle := c.s.cfg.IdleTimeout
	switch {
	case c.r < c.w:
		if c.partial {
			return true // the request's deadline stands
		}
		c.partial = true
		d = c.now().Add(c.s.cfg.ReadTimeout)
	case idle > 0:
		now := c.now()
		if left := c.rdeadline.Sub(now); left <= idle && left > idle-idle/16 {
			return true
		}
		d = now.Add(idle)
	default:
		if c.rdeadline.IsZero() {
			return true
		}
	}
	c.rdeadline = d
	return c.nc.SetReadDeadline(d) == nil
}

// now is the time of the last read: close enough for deadlines, and free.
func (c *conn) now() time.Time {
	if c.mark.IsZero() {
		return time.Now()
	}
	return c.mark
}

func (c *conn) readError(err error) {
	if !errors.Is(err, os.ErrDeadlineExceeded) || c.s.draining.Load() {
		return
	}
	if c.r < c.w {
		c.s.m.timeouts.WithLabelValues("read").Inc()
		c.s.log.Debug("closing connection with a half-written request", "remote", c.nc.RemoteAddr(),
			"timeout", c.s.cfg.ReadTimeout)
		c.wbuf = resp.AppendError(c.wbuf, "ERR Protocol error: request not completed within "+c.s.cfg.ReadTimeout.String())
		c.flush()
		return
	}
	c.s.m.timeouts.WithLabelValues("idle").Inc()
}

// emptyWbuf empties the write buffer once its replies are written, dropping
// a buffer that grew past keepWriteBuf.
func (c *conn) emptyWbuf() {
	if cap(c.wbuf) > keepWriteBuf {
		c.wbuf = make([]byte, 0, writeBufSize)
	} else {
		c.wbuf = c.wbuf[:0]
	}
}

// flush writes the buffered replies. It reports false when the connection
// is broken or the client stopped reading for WriteTimeout.
func (c *conn) flush() bool {
	if c.ev.l != nil {
		return c.evFlush() // non-blocking, under the epoll loop
	}
	if len(c.wbuf) == 0 {
		return true
	}
	now := time.Now()
	c.observe(now)
	if c.wdeadline.Sub(now) < c.s.cfg.WriteTimeout/2 {
		c.wdeadline = now.Add(c.s.cfg.WriteTimeout)
		if err := c.nc.SetWriteDeadline(c.wdeadline); err != nil {
			return false
		}
	}
	err := c.write()
	c.emptyWbuf()
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			c.s.m.timeouts.WithLabelValues("write").Inc()
		}
		return false
	}
	return true
}

// observe records the latency of the requests whose replies are about to be
// written: the time since the read that brought them. Requests of one
// pipeline share it, as they share the write that answers them.
func (c *conn) observe(now time.Time) {
	d := now.Sub(c.mark).Seconds()
	for k := range c.pending {
		for ; c.pending[k] > 0; c.pending[k]-- {
			c.s.m.latency[k].Observe(d)
		}
	}
}

// linger half-closes the connection and reads what the client still sends
// for a moment, so that the error just written reaches it: closing with
// unread input makes the kernel send a reset, and the client may lose the
// reply.
func (c *conn) linger() {
	tc, ok := c.nc.(*net.TCPConn)
	if !ok || tc.CloseWrite() != nil {
		return
	}
	_ = c.nc.SetReadDeadline(time.Now().Add(lingerTime))
	for total := 0; total < lingerBytes; {
		n, err := c.nc.Read(c.rbuf)
		total += n
		if err != nil {
			return
		}
	}
}
