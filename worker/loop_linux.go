package worker

import (
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// loop serves every TCP connection from one goroutine, as Redis does: an
// epoll set (level-triggered) over the non-blocking sockets, and per ready
// socket one read, the requests it completed executed, one write. A
// goroutine per connection costs, per request, a read that fails with EAGAIN
// before the goroutine parks, a park and a wake-up through the scheduler; on
// one core that was about a third of the time, and most of the p99.
//
// The loop does not block in epoll_wait itself: the epoll fd is registered
// with Go's netpoller (an epoll set is readable while it has ready fds), and
// the loop parks there, so no thread sits in a syscall holding the only P,
// and timers, ZooKeeper and HTTP goroutines run meanwhile. Once woken it
// calls epoll_wait with a zero timeout as a raw syscall.
type loop struct {
	s      *Server
	epfd   int
	ep     *os.File // epfd, for the netpoller
	rc     syscall.RawConn
	pollFn func(uintptr) bool

	wakeR, wakeW int // a pipe: the accept goroutine and Shutdown wake the loop

	// mu guards incoming, and orders kill against adopt: a connection is
	// either refused by a killed loop or seen by it.
	mu       sync.Mutex
	incoming []*evConn // handed over by adopt
	killed   atomic.Bool

	conns  []*evConn // by fd
	n      int       // connections in conns
	events [128]syscall.EpollEvent
	// now is read once per round of events: the time of every read in it
	// (conn.mark) and of the sweep check, one clock read, not one a socket.
	now   time.Time
	every time.Duration // sweep period for the timeouts
}

func newLoop(s *Server) (*loop, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	// os.NewFile registers only a non-blocking fd with the netpoller.
	if err := syscall.SetNonblock(epfd, true); err != nil {
		syscall.Close(epfd)
		return nil, err
	}
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_NONBLOCK|syscall.O_CLOEXEC); err != nil {
		syscall.Close(epfd)
		return nil, os.NewSyscallError("pipe2", err)
	}
	l := &loop{s: s, epfd: epfd, wakeR: p[0], wakeW: p[1], every: sweepEvery(s.cfg)}
	l.ep = os.NewFile(uintptr(epfd), "epoll")
	if l.rc, err = l.ep.SyscallConn(); err == nil {
		err = l.ctl(syscall.EPOLL_CTL_ADD, l.wakeR, syscall.EPOLLIN)
	}
	if err != nil {
		l.ep.Close()
		syscall.Close(p[0])
		syscall.Close(p[1])
		return nil, err
	}
	l.pollFn = l.poll
	return l, nil
}

// sweepEvery is how often the timeouts are checked: a tenth of the shortest,
// so that each fires at most 10% late.
func sweepEvery(cfg Config) time.Duration {
	d := min(cfg.ReadTimeout, cfg.WriteTimeout)
	if cfg.IdleTimeout > 0 {
		d = min(d, cfg.IdleTimeout)
	}
	return min(max(d/10, 10*time.Millisecond), time.Second)
}

func (l *loop) ctl(op, fd int, events uint32) error {
	ev := syscall.EpollEvent{Events: events, Fd: int32(fd)}
	if err := syscall.EpollCtl(l.epfd, op, fd, &ev); err != nil {
		return os.NewSyscallError("epoll_ctl", err)
	}
	return nil
}

// adopt takes over nc: the loop serves a duplicate of its socket, and nc is
// closed (which removes it from the netpoller; its addresses still answer).
// False leaves nc as it was.
func (l *loop) adopt(c *conn, nc net.Conn) bool {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.killed.Load() {
		return false // a killed loop takes no more (see run)
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return false
	}
	fd := -1
	if err := rc.Control(func(s uintptr) {
		r, _, errno := syscall.Syscall(syscall.SYS_FCNTL, s, syscall.F_DUPFD_CLOEXEC, 0)
		if errno == 0 {
			fd = int(r)
		}
	}); err != nil || fd < 0 {
		return false
	}
	nc.Close()
	e := &evConn{c: c, l: l, fd: fd}
	c.t = e
	c.mark = time.Now()
	l.incoming = append(l.incoming, e)
	l.wake()
	return true
}

// wake makes the loop look at incoming connections and the server's state.
func (l *loop) wake() {
	b := [1]byte{1}
	_, _, _ = syscall.RawSyscall(syscall.SYS_WRITE, uintptr(l.wakeW), uintptr(unsafe.Pointer(&b[0])), 1)
}

// kill makes the loop close every connection, written or not, and stop.
func (l *loop) kill() {
	l.mu.Lock()
	l.killed.Store(true)
	l.mu.Unlock()
	l.wake()
}

// run is the loop; it returns once the server drains or is killed and no
// connection is left.
func (l *loop) run() {
	defer func() {
		l.ep.Close()
		syscall.Close(l.wakeR)
		syscall.Close(l.wakeW)
	}()
	next := time.Now().Add(l.every)
	_ = l.ep.SetReadDeadline(next)
	for {
		err := l.rc.Read(l.pollFn)
		if errors.Is(err, os.ErrDeadlineExceeded) || l.now.After(next) {
			l.sweep()
			next = time.Now().Add(l.every)
			_ = l.ep.SetReadDeadline(next)
		} else if err != nil {
			// Not expected (only run closes the epoll fd): drop this
			// loop's connections rather than spin.
			l.s.log.Error("epoll loop failed; closing its connections", "error", err)
			l.killed.Store(true)
			l.woken()
			return
		}
		if l.done() {
			return
		}
	}
}

// poll is the RawConn callback: false parks the loop in the netpoller until
// the epoll set has something ready.
func (l *loop) poll(fd uintptr) bool {
	n, _, errno := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, fd, uintptr(unsafe.Pointer(&l.events[0])),
		uintptr(len(l.events)), 0, 0, 0)
	if errno != 0 || n == 0 {
		return errno != 0 && errno != syscall.EINTR
	}
	l.now = time.Now()
	for i := range l.events[:n] {
		ev := &l.events[i]
		if int(ev.Fd) == l.wakeR {
			l.woken()
			continue
		}
		e := l.conns[ev.Fd]
		if e == nil {
			continue
		}
		var ok bool
		if e.c.stalled {
			ok = e.onWritable()
		} else {
			ok = e.onReadable()
		}
		if !ok {
			l.finish(e)
		}
	}
	return true
}

// woken empties the wake pipe, registers incoming connections and applies a
// drain or a kill.
func (l *loop) woken() {
	var b [64]byte
	for {
		n, _, errno := syscall.RawSyscall(syscall.SYS_READ, uintptr(l.wakeR), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
		if errno != 0 || n == 0 {
			break
		}
	}
	l.mu.Lock()
	in := l.incoming
	l.incoming = nil
	l.mu.Unlock()
	for _, e := range in {
		if err := l.ctl(syscall.EPOLL_CTL_ADD, e.fd, syscall.EPOLLIN); err != nil {
			l.s.log.Warn("cannot watch connection", "error", err)
			l.close(e)
			continue
		}
		for e.fd >= len(l.conns) {
			l.conns = append(l.conns, make([]*evConn, len(l.conns)+64)...)
		}
		l.conns[e.fd] = e
		l.n++
	}
	killed, draining := l.killed.Load(), l.s.draining.Load()
	if !killed && !draining {
		return // an accept: no need to walk every connection
	}
	for _, e := range l.conns {
		if e != nil && (killed || !e.c.stalled && !e.lingering) {
			l.close(e)
		}
	}
}

// finish ends a connection once its replies are out: at once, after a
// pending write, or after lingering.
func (l *loop) finish(e *evConn) {
	if e.c.stalled && !l.killed.Load() {
		e.closing = true
		return
	}
	if e.lingerNext && !e.lingering && syscall.Shutdown(e.fd, syscall.SHUT_WR) == nil {
		e.lingering, e.lingerUntil = true, time.Now().Add(lingerTime)
		return
	}
	l.close(e)
}

func (l *loop) close(e *evConn) {
	fd := e.fd
	if fd < len(l.conns) && l.conns[fd] == e {
		l.conns[fd] = nil
		l.n--
	}
	syscall.Close(fd) // also leaves the epoll set
	e.fd = -1         // a later flush fails instead of writing to a reused fd
	l.s.release(e.c)
}

// sweep applies the idle, read, write and linger timeouts.
func (l *loop) sweep() {
	now := time.Now()
	draining := l.s.draining.Load()
	for _, e := range l.conns {
		switch {
		case e == nil:
		case e.lingering:
			if now.After(e.lingerUntil) {
				l.close(e)
			}
		case e.c.stalled:
			if now.After(e.wdeadline) {
				e.c.timedOut(timeoutWrite)
				l.close(e)
			}
		default:
			d, kind := e.c.readDeadline()
			if d.IsZero() || !now.After(d) {
				continue
			}
			if kind == timeoutIdle || !draining {
				e.c.timedOut(kind)
				e.flush() // the read timeout's reply, if the socket takes it
			}
			l.close(e)
		}
	}
}

func (l *loop) done() bool {
	if !l.killed.Load() && !l.s.draining.Load() {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n == 0 && len(l.incoming) == 0
}
