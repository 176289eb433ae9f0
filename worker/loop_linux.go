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
// calls epoll_wait with a zero timeout as a raw syscall. The park can miss
// its wake-up; the loops rescue each other (loopwake_linux.go).
type loop struct {
	s      *Server
	epfd   int
	ep     *os.File // epfd, for the netpoller
	rc     syscall.RawConn
	pollFn func(uintptr) bool

	wakeR, wakeW int // a pipe: the accept goroutine and Shutdown wake the loop

	// mu guards incoming and exited, and orders kill against adopt: a
	// connection is either refused by a killed loop or seen by it.
	mu       sync.Mutex
	incoming []*evConn // handed over by adopt
	killed   atomic.Bool
	// revoking: some connection was revoked (Server.revoke); the next
	// wake-up closes every one so marked.
	revoking atomic.Bool
	// exited: run returned and closed the wake pipe; wake writes nothing
	// then, since the fd numbers may already be another socket's.
	exited bool

	conns  []*evConn // by fd
	n      int       // connections in conns
	events [128]syscall.EpollEvent
	// runq holds the connections with complete requests left after their
	// slice, in turn, from runq[head]; parked, those whose ID request waits
	// for the generator's next millisecond, until parkedUntil.
	runq   []*evConn
	head   int
	parked []*evConn
	// lightq holds the connections whose light request (fairids.go) is
	// due: they run before the run queue.
	lightq []*evConn
	// fullUntil: a request of this loop found the generator's millisecond
	// used up, until then. The heavy requests due meanwhile are parked
	// again untried: with hundreds of NEXTRANGE 2048 pipeliners, two take
	// a millisecond, and the rest were each a slice parsed and refused,
	// every millisecond.
	fullUntil time.Time
	// noPwait2: epoll_pwait2 is missing (Linux before 5.11); a parked wait
	// then rounds up to whole milliseconds.
	noPwait2 bool
	// now is read once per round of events: the time of every read in it
	// (conn.mark) and of the sweep check, one clock read, not one a socket.
	now   time.Time
	every time.Duration // sweep period for the timeouts
	// siblings are the server's loops, this one among them; parkedAt,
	// lastRescue: see loopwake_linux.go.
	siblings   []*loop
	parkedAt   atomic.Int64
	lastRescue time.Time
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
	if l.killed.Load() || l.exited {
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
	c.noWait = true
	c.mark = time.Now()
	l.incoming = append(l.incoming, e)
	l.wakeLocked()
	return true
}

// wake makes the loop look at incoming connections and the server's state.
func (l *loop) wake() {
	l.mu.Lock()
	l.wakeLocked()
	l.mu.Unlock()
}

// wakeLocked is wake with l.mu held. A loop that has exited is not woken:
// its pipe is closed, and its fd numbers may be another socket's by now.
func (l *loop) wakeLocked() {
	if l.exited {
		return
	}
	b := [1]byte{1}
	_, _, _ = syscall.RawSyscall(syscall.SYS_WRITE, uintptr(l.wakeW), uintptr(unsafe.Pointer(&b[0])), 1)
}

// revoke makes the loop close its revoked connections.
func (l *loop) revoke() {
	l.revoking.Store(true)
	l.wake()
}

// kill makes the loop close every connection, written or not, and stop.
func (l *loop) kill() {
	l.mu.Lock()
	l.killed.Store(true)
	l.wakeLocked()
	l.mu.Unlock()
}

// run is the loop; it returns once the server drains or is killed and no
// connection is left.
func (l *loop) run() {
	defer func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.exited = true
		l.ep.Close()
		syscall.Close(l.wakeR)
		syscall.Close(l.wakeW)
	}()
	next := time.Now().Add(l.every)
	_ = l.ep.SetReadDeadline(next)
	for {
		err := l.rc.Read(l.pollFn)
		if errors.Is(err, os.ErrDeadlineExceeded) || l.now.After(next) {
			// The deadline is the sweep's, or a sibling's rescue
			// (loopwake_linux.go): Read fails at once until it moves.
			if now := time.Now(); !now.Before(next) {
				l.sweep()
				next = now.Add(l.every)
			}
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

// roundSlices is how many queued slices a round runs at most before the
// loop looks at its sockets again. A connection that was idle and sent a
// request (a client of single NEXTIDs) is served in the next round, ahead
// of the backlogs: it waits for at most this many slices, not for every
// backlogged connection's (256 pipeliners of NEXTID, a write each, made a
// round of over 5 ms). The price is an epoll_wait of nothing per this many
// slices, under a backlog only.
const roundSlices = 16

// poll is the RawConn callback: one round. It takes the ready sockets
// (without waiting while connections are queued; until the first parked
// one is due while some are parked), runs the light requests that are due
// (unpark), gives each ready socket a read and a slice, then
// gives the connections queued longest, at most roundSlices of them, one
// more slice. False parks the loop in the netpoller until the epoll set
// has something ready: only when no connection has work left.
func (l *loop) poll(fd uintptr) bool {
	var wait time.Duration
	backlog := l.head < len(l.runq)
	if !backlog && len(l.parked) > 0 {
		wait = max(time.Until(l.firstDue()), 0)
	}
	if backlog {
		// Busy with backlogs, the loop never blocks, and the kernel lets
		// it run out its slice: a thread woken on its core meanwhile (the
		// kernel's network softirq thread, a sidecar, a client on the same
		// host) waited for the next scheduler tick, 4 ms on this machine,
		// and 256 NEXTID pipeliners held a client of single NEXTIDs at
		// p99 4.4-8.0 ms; yielding once a round, 1.7-4.3 ms. Alone on its
		// core the loop is back at once (a syscall, under a microsecond).
		yieldCore()
	}
	n, errno := l.epollWait(fd, wait)
	if errno != 0 {
		if errno != syscall.EINTR {
			return true
		}
		n = 0
	}
	if n == 0 && !backlog && len(l.parked) == 0 {
		l.parkedAt.Store(time.Now().UnixNano())
		return false
	}
	l.parkedAt.Store(0)
	l.now = time.Now()
	l.rescueSiblings()
	// The light requests due first: a heavy request on this loop, read in
	// this round, would take the millisecond they waited for.
	l.unpark()
	for i, e := range l.lightq {
		l.lightq[i] = nil
		e.queued = false
		if e.fd < 0 || l.conns[e.fd] != e {
			continue // closed meanwhile (close counted it out)
		}
		// Counted out once it has tried; parked again, it is counted anew.
		e.small = false
		ok := e.step()
		l.s.fair.lightWaiting.Add(-1)
		if !ok {
			l.finish(e)
		}
	}
	l.lightq = l.lightq[:0]
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
		if e.queued || !e.parkedUntil.IsZero() {
			// Its backlog first; it is not read meanwhile, nor watched
			// (evConn.watch), so this is a reset or an error, reported
			// whatever the set asks for: its replies can no longer
			// arrive, and left there it would be reported at every wait.
			if ev.Events&(syscall.EPOLLERR|syscall.EPOLLHUP) != 0 {
				l.close(e)
			}
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
	for range roundSlices {
		if l.head == len(l.runq) {
			break
		}
		e := l.runq[l.head]
		l.runq[l.head] = nil
		l.head++
		e.queued = false
		if e.fd < 0 || l.conns[e.fd] != e {
			continue // closed meanwhile
		}
		if e.heavyDue {
			e.heavyDue = false
			if l.now.Before(l.fullUntil) {
				e.parkedUntil = l.fullUntil
				l.parked = append(l.parked, e)
				continue
			}
		}
		var ok bool
		if e.readNext {
			ok = e.readAgain()
		} else {
			ok = e.step()
		}
		if !ok {
			l.finish(e)
		}
	}
	switch {
	case l.head == len(l.runq):
		l.runq, l.head = l.runq[:0], 0
	case l.head > len(l.runq)/2:
		n := copy(l.runq, l.runq[l.head:])
		clear(l.runq[n:])
		l.runq, l.head = l.runq[:n], 0
	}
	return true
}

// epollWait is epoll_pwait without a timeout, or, when wait > 0,
// epoll_pwait2 with a timeout of wait, in nanoseconds: a parked request is
// due at the start of a millisecond and epoll_pwait counts in whole ones.
// A timed wait is an ordinary syscall, not a raw one: the runtime may hand
// this loop's P to other goroutines meanwhile (two loops waiting in raw
// syscalls would hold both Ps of a 2-core machine for up to a millisecond
// at a time). The netpoller's own timers count in whole milliseconds,
// too coarse for a request due at the next one.
func (l *loop) epollWait(fd uintptr, wait time.Duration) (int, syscall.Errno) {
	evs, nev := uintptr(unsafe.Pointer(&l.events[0])), uintptr(len(l.events))
	if wait > 0 && !l.noPwait2 {
		ts := syscall.NsecToTimespec(int64(wait))
		n, _, errno := syscall.Syscall6(sysEpollPwait2, fd, evs, nev, uintptr(unsafe.Pointer(&ts)), 0, 0)
		if errno != syscall.ENOSYS {
			return int(n), errno
		}
		l.noPwait2 = true
	}
	if wait == 0 {
		n, _, errno := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, fd, evs, nev, 0, 0, 0)
		return int(n), errno
	}
	ms := uintptr((wait + time.Millisecond - 1) / time.Millisecond)
	n, _, errno := syscall.Syscall6(syscall.SYS_EPOLL_PWAIT, fd, evs, nev, ms, 0, 0)
	return int(n), errno
}

// firstDue is when the first parked connection may try again.
func (l *loop) firstDue() time.Time {
	t := l.parked[0].parkedUntil
	for _, e := range l.parked[1:] {
		if e.parkedUntil.Before(t) {
			t = e.parkedUntil
		}
	}
	return t
}

// park takes e off the loop until d has passed: its ID request waits for
// the generator's next millisecond, and the loop serves the others
// meanwhile instead of sleeping.
func (l *loop) park(e *evConn, d time.Duration) {
	e.parkedUntil = l.now.Add(d)
	if e.small = !e.c.waitBig; e.small {
		l.s.fair.lightWaiting.Add(1)
	}
	if !e.c.yielded && e.parkedUntil.After(l.fullUntil) {
		l.fullUntil = e.parkedUntil
	}
	l.parked = append(l.parked, e)
}

// unpark queues the parked connections that are due, for this round, the
// light requests first (fairids.go), ahead of the run queue. A heavy
// request (more than what is left of its connection's budget of IDs)
// that finds light ones waiting, on any loop, goroutine or HTTP
// connection, waits a little longer: it would take the fresh millisecond
// they all wait for, and clients that
// pipeline NEXTRANGE 2048 by the hundred would hold everyone else's
// NEXTID for half as many milliseconds as there are such clients. It is
// not queued to find that out (idShare.yield would say the same): with
// hundreds parked, that was a slice each per deferral.
func (l *loop) unpark() {
	kept := l.parked[:0]
	for _, e := range l.parked {
		switch {
		case e.fd < 0:
		case l.now.Before(e.parkedUntil) || !e.small:
			kept = append(kept, e)
		default:
			// Still counted in lightWaiting until it has tried: a heavy
			// request on the other loop, due at the same instant, gives
			// way until then.
			e.parkedUntil, e.queued = time.Time{}, true
			l.lightq = append(l.lightq, e)
		}
	}
	clear(l.parked[len(kept):])
	l.parked = kept
	kept = l.parked[:0]
	g := l.s.lease.Generator()
	for _, e := range l.parked {
		switch {
		case e.small || l.now.Before(e.parkedUntil):
			kept = append(kept, e)
		case g != nil && l.s.fair.giveWay(g.LastMs()):
			l.s.fair.deferrals.Inc()
			e.parkedUntil = l.now.Add(bigDefer)
			kept = append(kept, e)
		default:
			e.parkedUntil, e.heavyDue = time.Time{}, true
			l.queue(e)
		}
	}
	clear(l.parked[len(kept):])
	l.parked = kept
}

// queue gives e another slice in the next round.
func (l *loop) queue(e *evConn) {
	if !e.queued {
		e.queued = true
		l.runq = append(l.runq, e)
	}
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
		e.armed = syscall.EPOLLIN
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
	if l.revoking.Swap(false) {
		for _, e := range l.conns {
			if e != nil && e.c.revoked.Load() {
				l.close(e)
			}
		}
	}
	killed, draining := l.killed.Load(), l.s.draining.Load()
	if !killed && !draining {
		return // an accept: no need to walk every connection
	}
	for _, e := range l.conns {
		switch {
		case e == nil:
		case killed:
			l.close(e)
		case !e.busy():
			// Idle: its last read (evConn.idle) takes what the kernel
			// has received, to be answered before it closes.
			if !e.idle() {
				l.finish(e)
			}
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
	if e.lingerNext && !e.lingering && !l.killed.Load() && syscall.Shutdown(e.fd, syscall.SHUT_WR) == nil {
		e.lingering, e.lingerUntil = true, time.Now().Add(lingerTime)
		return
	}
	l.close(e)
}

func (l *loop) close(e *evConn) {
	if e.small {
		e.small = false
		l.s.fair.lightWaiting.Add(-1)
	}
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
			if e.c.overOutputLimit(now, e.out) {
				e.c.closedOverLimit(e.out)
				l.close(e)
			} else if now.After(e.wdeadline) {
				e.c.timedOut(timeoutWrite)
				l.close(e)
			}
		case e.queued || !e.parkedUntil.IsZero():
			// Busy with its backlog, not idle.
		default:
			d, kind := e.c.readDeadline()
			if d.IsZero() || !now.After(d) {
				continue
			}
			if kind == timeoutRead && !draining {
				// The reply says why; lingering gets it to the client.
				e.c.timedOut(kind)
				e.lingerNext = e.flush()
				l.finish(e)
				continue
			}
			if kind == timeoutIdle {
				e.c.timedOut(kind)
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
