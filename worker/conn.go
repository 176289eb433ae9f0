package worker

import (
	"crypto/sha256"
	"net"
	"sync/atomic"
	"time"

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

// conn is one client connection as a protocol state machine: its transport
// reads into rbuf[w:] and reports it (received); execSlice executes a
// slice of the complete requests, appending replies to wbuf; prepareRead makes room for
// the next read and says until when it may take (readDeadline). conn does
// no I/O itself: the transport writes wbuf (flush) and applies the
// timeouts, either a goroutine per connection (serve.go) or the Linux epoll
// loop (evconn_linux.go). What the protocol counts (requests, latencies,
// protocol errors, timeouts) is counted here, whatever the transport.
type conn struct {
	s  *Server
	nc net.Conn // for its addresses; the transport owns the socket
	id int64
	t  transport

	rbuf []byte // requests are rbuf[r:w]
	r, w int
	p    parser
	argv [][]byte
	wbuf []byte
	// partial is set while a started request waits for its remaining bytes;
	// it must be complete by reqDeadline (ReadTimeout after the read that
	// started it).
	partial     bool
	reqDeadline time.Time
	// stalled is set by the transport while a write waits for the socket
	// to drain: no request is executed meanwhile, so a client that does not
	// read its replies is not read from either.
	stalled bool
	// run is the last NEXTIDS reply in wbuf, which the transport may drop
	// when the socket fills and make again as it takes it; taken is when
	// the socket of a stalled connection last took some (outlimit.go).
	run   idRun
	taken time.Time
	// lazyRuns: the transport cannot tell when the socket is full (TLS):
	// runs are made a chunk at a time as it writes them.
	lazyRuns bool

	// mark is when the last read returned: the requests it brought are
	// timed from it to their reply written.
	mark time.Time
	// pending counts, by cmdKind, the requests whose replies wait in wbuf.
	pending []uint32
	// ready caches the lease's Ready for the requests of one slice.
	ready bool
	// noWait: take IDs with TryNextN, and when the generator must wait for
	// its next millisecond, stop the slice (sliceWait) with the wait in
	// retry instead of sleeping; the epoll loop sets it, which serves
	// other connections meanwhile.
	noWait bool
	retry  time.Duration
	// waitBig: the waiting request is heavy, more than what is left of
	// the connection's budget of IDs (see loop.unpark).
	waitBig bool
	// share is the connection's budget of IDs (fairids.go); yielded: the
	// waiting request gives way to light ones, the generator has IDs.
	share   idShare
	yielded bool
	// form is the connection's IDFORMAT.
	form idForm
	// refused is set when an ID request was refused (-NOLEASE, -CLOCKBACK)
	// and Config.CloseOnNoLease asks to close after the reply, so that a
	// pooled client behind a balancer reconnects to a worker that serves.
	refused bool

	// authed: the connection has authenticated, or connected while no
	// password was set (auth.go).
	authed bool
	// pass is the digest of the password it authenticated with (auth.none
	// without one); nil until then. Guarded by auth.mu: SetPasswords
	// reads it to close the connections of a password rotated out.
	pass *[sha256.Size]byte
	// revoked: a rotation closed it (Server.revoke); its epoll loop, if
	// any, closes its socket.
	revoked atomic.Bool
	// wrongPasswords counts its WRONGPASS replies; closeAfter closes it
	// after the current reply (MaxWrongPasswords reached).
	wrongPasswords int
	closeAfter     bool

	name    string
	scratch [64]byte
}

// transport is how a connection's replies reach its socket.
type transport interface {
	// flush writes wbuf, or, when the socket is full and the transport does
	// not block, what it takes, setting conn.stalled until the rest is
	// written. False: the connection is broken or timed out.
	flush() bool
	// unsent is how many bytes of replies the kernel holds for the socket
	// and has not sent yet (0 where it cannot tell).
	unsent() int
}

func newConn(s *Server, nc net.Conn, id int64) *conn {
	return &conn{
		s: s, nc: nc, id: id,
		rbuf:    s.bufs.get(readBufSize),
		p:       newParser(),
		argv:    make([][]byte, 0, 8),
		wbuf:    s.bufs.get(writeBufSize)[:0],
		pending: make([]uint32, len(s.cmds)),
	}
}

func (c *conn) flush() bool { return c.t.flush() }

// received records n bytes read into rbuf[w:] at now.
func (c *conn) received(n int, now time.Time) {
	c.w += n
	c.mark = now
}

// sliceReqs is how many requests a connection runs before the others get
// their turn (a slice also ends once flushAt bytes of requests read and
// replies buffered add up, a measure of its cost: a SETNAME of 60 KiB
// costs what its bytes cost, not what one request does): a
// client that pipelines thousands of requests, or NEXTIDS 4096 by the
// hundred, costs everyone else at most one slice a round, not its whole
// backlog (issue 19). A pipeline of 16, the common deep one, is one slice.
const sliceReqs = 16

// sliceEnd is how a slice of requests ended, and what the transport does
// next.
type sliceEnd uint8

const (
	// sliceIdle: no complete request is left (or a write stalled): wait
	// for the socket.
	sliceIdle sliceEnd = iota
	// sliceMore: the slice is used up and complete requests are left: run
	// another slice after the other connections had theirs.
	sliceMore
	// sliceWait: an ID request waits for the generator's next millisecond
	// (retry); it runs again then (transports that set noWait only).
	sliceWait
	// sliceClose: close once the replies are written (QUIT).
	sliceClose
	// sliceLinger: a protocol error or a refusal (CloseOnNoLease): write
	// the reply, then linger so that it reaches a client that sent more.
	sliceLinger
)

// execSlice executes the complete requests in rbuf in order, at most
// sliceReqs of them or until flushAt bytes of requests and replies, a write
// stalled, or an ID request must wait. It does no I/O: the transport
// writes the replies after each slice. Readiness is re-checked once a
// slice, so "not ready" means no IDs within a slice, however deep the
// pipeline and however slowly its replies are read.
func (c *conn) execSlice() sliceEnd {
	c.ready = false
	start := c.r
	for i := 0; !c.stalled && c.r < c.w; i++ {
		if i == sliceReqs || len(c.wbuf)+c.r-start >= flushAt || c.outputFull() {
			return sliceMore
		}
		frame := c.rbuf[c.r:c.w]
		if !c.p.started() {
			c.p.unauth = !c.authed && c.s.auth.required()
		}
		n, err := c.p.parse(frame)
		if err != nil {
			c.protocolError(err)
			return sliceLinger
		}
		if n == 0 {
			break
		}
		c.argv = c.p.args(frame, c.argv)
		c.p.reset()
		c.partial = false
		if len(c.argv) == 0 {
			c.r += n
			continue
		}
		c.retry = 0
		if !c.exec(c.argv) {
			if c.retry > 0 {
				return sliceWait // rbuf[r:] still holds the request
			}
			c.r += n
			if c.refused {
				return sliceLinger
			}
			return sliceClose
		}
		c.r += n
	}
	return sliceIdle
}

// protocolError counts a malformed request and answers it; the connection
// closes after the reply.
func (c *conn) protocolError(err error) {
	c.s.m.protoErrs.Inc()
	c.s.log.Debug("closing connection on a protocol error", "remote", c.nc.RemoteAddr(), "error", err)
	c.wbuf = resp.AppendError(c.wbuf, "ERR "+err.Error())
}

// prepareRead makes room in rbuf for the next read: it moves a partial
// request to the front of the buffer, or grows the buffer when the request
// fills all of it; an oversized buffer shrinks back once what is left in
// it fits a small one, so a client that keeps a partial request at the end
// of every read does not keep a large buffer. A request just started gets
// its deadline. False: the request cannot fit; the protocol error is in
// wbuf, for the transport to write before it lingers.
func (c *conn) prepareRead() bool {
	if !c.makeRoom() {
		return false
	}
	if c.r < c.w && !c.partial {
		c.partial = true
		c.reqDeadline = c.now().Add(c.s.cfg.ReadTimeout)
	}
	return true
}

func (c *conn) makeRoom() bool {
	if c.r == c.w {
		c.r, c.w = 0, 0
		if len(c.rbuf) > readBufSize {
			c.s.bufs.put(c.rbuf)
			c.rbuf = c.s.bufs.get(readBufSize)
		}
		return true
	}
	if len(c.rbuf) > readBufSize && c.w-c.r <= readBufSize/2 {
		nb := c.s.bufs.get(readBufSize)
		c.w = copy(nb, c.rbuf[c.r:c.w])
		c.s.bufs.put(c.rbuf)
		c.r, c.rbuf = 0, nb
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
		c.protocolError(errBigFrame)
		return false
	}
	nb := c.s.bufs.get(min(2*len(c.rbuf), MaxFrame))
	copy(nb, c.rbuf[:c.w])
	c.s.bufs.put(c.rbuf)
	c.rbuf = nb
	return true
}

// timeoutKind is which timeout closed a connection, a metric label.
type timeoutKind uint8

const (
	timeoutIdle  timeoutKind = iota // IdleTimeout between requests
	timeoutRead                     // ReadTimeout within a request
	timeoutWrite                    // WriteTimeout on a write of replies
)

func (k timeoutKind) String() string {
	switch k {
	case timeoutRead:
		return "read"
	case timeoutWrite:
		return "write"
	}
	return "idle"
}

// readDeadline is when the next read must have come, and which timeout
// passes then: ReadTimeout after the read that started a half-received
// request, else IdleTimeout after the last read; zero: never.
func (c *conn) readDeadline() (time.Time, timeoutKind) {
	if c.partial {
		return c.reqDeadline, timeoutRead
	}
	if idle := c.s.cfg.IdleTimeout; idle > 0 {
		return c.now().Add(idle), timeoutIdle
	}
	return time.Time{}, timeoutIdle
}

// timedOut counts a timeout that closes the connection; a half-received
// request is answered (the transport then writes the reply if it can).
func (c *conn) timedOut(k timeoutKind) {
	c.s.m.timeouts[k].Inc()
	if k != timeoutRead {
		return
	}
	c.s.log.Debug("closing connection with a half-written request", "remote", c.nc.RemoteAddr(),
		"timeout", c.s.cfg.ReadTimeout)
	c.wbuf = resp.AppendError(c.wbuf, "ERR Protocol error: request not completed within "+c.s.cfg.ReadTimeout.String())
}

// now is the time of the last read: close enough for deadlines, and free.
func (c *conn) now() time.Time {
	if c.mark.IsZero() {
		return time.Now()
	}
	return c.mark
}

// emptyWbuf empties the write buffer once its replies are written, dropping
// a buffer that grew past keepWriteBuf, or one of the size of what a shed
// kept (outlimit.go).
func (c *conn) emptyWbuf() {
	c.run = idRun{}
	if cap(c.wbuf) > keepWriteBuf || cap(c.wbuf) < writeBufSize {
		c.wbuf = c.s.bufs.get(writeBufSize)[:0]
	} else {
		c.wbuf = c.wbuf[:0]
	}
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
