package worker

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
type backlogTurns chan struct{}

func newBacklogTurns(procs int) backlogTurns {
	return make(backlogTurns, max(procs-1, 1))
}

// wait waits for a turn, in order of asking; *held records it. A turn
// covers one slice's work and its write, never a wait for a client: what
// waits gives it up first (writeRaw before it waits for room, writeConn,
// whose net.Conn write may wait, linger, and serve before it reads).
func (t backlogTurns) wait(held *bool) {
	t <- struct{}{}
	*held = true
}

// done gives up the turn the caller holds, if any.
func (t backlogTurns) done(held *bool) {
	if *held {
		<-t
		*held = false
	}
}
