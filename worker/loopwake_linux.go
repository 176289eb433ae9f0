package worker

import (
	"syscall"
	"time"
	"unsafe"
)

// A loop's missed wake-ups, and its siblings' rescue. A loop with nothing to
// do parks in Go's netpoller on its epoll fd, which is readable while the
// epoll set has a ready socket: an epoll set inside Go's. Under six
// connections flooding 60 KiB CLIENT SETNAMEs, a loop sat parked for 4-50
// ms, 80-370 times in 10 s, while its epoll set held ready sockets, Go's
// held nothing for it (a watchdog calling epoll_wait on both), and a
// deadline set on the park to bound it had passed by up to 18 ms: the other
// loop, busy, kept the second P and its thread found work in the netpoller
// at every turn, and nothing ran the parked loop's wake-up or its timer.
// Clients of NEXTIDS 16 on the parked loop saw a p99 of 11-17 ms
// (deploy/bench-history.md, "A loop parked with ready sockets"). So a loop
// that runs rounds looks at its siblings once every rescueEvery: one parked
// for rescueAfter with sockets ready is woken from here, by moving its
// deadline into the past, which readies a parked goroutine at once
// (the netpoller's deadline path, no timer, no epoll edge), and counted
// (snowflake_worker_loop_missed_wakeups_total). A busy loop pays a clock
// comparison a round and, for a sibling parked that long, one epoll_wait
// a millisecond.
const (
	rescueEvery = time.Millisecond
	rescueAfter = time.Millisecond
)

// rescueSiblings wakes the siblings parked with sockets ready, at most once
// every rescueEvery.
func (l *loop) rescueSiblings() {
	if l.now.Sub(l.lastRescue) < rescueEvery {
		return
	}
	l.lastRescue = l.now
	for _, o := range l.siblings {
		if o != l {
			o.rescue(l.now)
		}
	}
}

// rescue wakes l if it has been parked since before now-rescueAfter with a
// socket ready. Called from a sibling: l.mu keeps l's epoll fd from closing
// meanwhile; the epoll_wait reports without consuming (the set is
// level-triggered).
func (l *loop) rescue(now time.Time) {
	at := l.parkedAt.Load()
	if at == 0 || now.UnixNano()-at < int64(rescueAfter) {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.exited {
		return
	}
	var ev [1]syscall.EpollEvent
	n, _, _ := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(l.epfd), uintptr(unsafe.Pointer(&ev[0])), 1, 0, 0, 0)
	if int(n) <= 0 || l.parkedAt.Load() != at {
		return
	}
	l.s.m.missedWakes.Inc()
	_ = l.ep.SetReadDeadline(time.Unix(1, 0))
}
