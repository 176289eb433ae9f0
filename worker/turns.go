package worker

import "sync/atomic"

// backlogTurns gates the goroutines' backlogs (goConn.serve): a goroutine
// whose connection has requests left after its slice waits for a turn
// before its next slice, and at most GOMAXPROCS-1 hold one at once (one on
// a single P). Go's scheduler looks at the network only when a P finds its
// run queues empty, or every 10 ms (sysmon): goroutines that only yielded
// (runtime.Gosched) after each slice kept every run queue full under 64
// NEXTID pipeliners, and a client of single NEXTIDs, whose request had
// arrived, waited for that poll (p99 11-16 ms). Waiting for a turn, they
// are parked instead, one P is left for fresh requests and, when it has
// none, for the network. A backlog's first slice after each read needs no
// turn, so a pipeline of up to 16 requests never waits for one.
type backlogTurns struct {
	ch chan struct{}
	// taken counts the turns taken, for the yield of every
	// turnsPerYield-th.
	taken atomic.Uint32
}

// turnsPerYield: every this many turns, the goroutine that takes one
// yields its thread's core to the kernel (yieldCore) before its slice, as
// the epoll loop does once a round (of up to 16 backlog slices). A turn
// handed on wakes the next backlog on the same thread, in the time slice
// of the one before (Go's runnext), so under NEXTID pipeliners one thread
// ran turn after turn, never blocking, and the kernel let it run out its
// slice: the thread that had taken the measuring client's request from
// the network, woken on the same core, waited for the next scheduler tick
// (4 ms here) while the other core idled or ran idle-priority work (perf
// sched), and the client's p99 was 4.4-10.5 ms; yielding, 0.5-1.1 ms
// (deploy/bench-history.md, "The goroutines' turns yield the core").
const turnsPerYield = 16

func newBacklogTurns(procs int) *backlogTurns {
	return &backlogTurns{ch: make(chan struct{}, max(procs-1, 1))}
}

// wait waits for a turn, in order of asking; *held records it. A turn
// covers one slice's work and its write, never a wait for a client: what
// waits gives it up first (writeRaw before it waits for room, writeConn,
// whose net.Conn write may wait, linger, and serve before it reads).
func (t *backlogTurns) wait(held *bool) {
	t.ch <- struct{}{}
	*held = true
	if t.taken.Add(1)%turnsPerYield == 0 {
		yieldCore()
	}
}

// done gives up the turn the caller holds, if any.
func (t *backlogTurns) done(held *bool) {
	if *held {
		<-t.ch
		*held = false
	}
}
