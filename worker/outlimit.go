package worker

import (
	"sync"
	"time"

	"github.com/snowfleet/snowfleet/snowflake"
	"github.com/snowfleet/snowfleet/worker/resp"
)

// The output limit (Config.ClientOutputLimit), Redis's
// client-output-buffer-limit for a client that does not read its replies:
// what the worker holds for it stays bounded, and it is closed once it
// holds the worker's replies up for long.
//
//   - A slice of requests ends once the limit of replies waits in wbuf
//     (conn.outputFull), and no request runs while the socket is full (the
//     transports' stalled), so a connection never has more than about the
//     limit of replies waiting, plus the last one.
//   - The last reply may be a NEXTIDS run (up to 90 KiB for 4,096 IDs as
//     strings): it is appended whole, and written in one go to a client
//     that reads; when the socket fills, what it has not taken of the run
//     is dropped (shed) and made again from its first ID a chunk at a
//     time (refill) as the socket takes it. The IDs were issued when the
//     request ran; only their text waits.
//   - A connection whose socket has taken nothing for outputStall while
//     more than the limit of its replies waits, in wbuf, to be made, and
//     in the kernel's send queue not sent yet, is closed, counted
//     (snowflake_worker_output_limit_closes_total) and logged at most once
//     a minute. One that reads, however slowly, takes something within a
//     round trip.
const (
	// outputStall is how long the socket of a connection over its limit
	// may take nothing before it is closed: a client that reads takes
	// some within a round trip; a pause longer than this (a GC pause of
	// the client's) is taken for a client that stopped reading.
	outputStall = 2 * time.Second
	// refillChunk is how much of a shed run is made again at a time.
	refillChunk = 16 << 10
	// outputLogEvery bounds the log lines about the closes.
	outputLogEvery = time.Minute
)

// idRun is the NEXTIDS reply last appended to wbuf, which can be made again
// from its first ID: the text of its elements next..made-1 is wbuf[at:end];
// those from made on are not made yet (a shed run).
type idRun struct {
	first         int64
	n, next, made int
	form          idForm
	at, end       int
}

// appendIDElems appends first .. first+n-1 as the elements of a NEXTIDS
// reply in form (the array header is the caller's).
func appendIDElems(dst []byte, first int64, n int, form idForm) []byte {
	switch form {
	case formShort:
		return appendShortIDs(dst, first, n, false)
	case formString:
		return resp.AppendBulkIntRun(dst, first, n)
	}
	return resp.AppendIntRun(dst, first, n)
}

// elemLen is the length of ID v's element in form.
func elemLen(v int64, form idForm) int {
	if form == formShort {
		return len("$13\r\n") + snowflake.ShortLen + 2
	}
	var b [32]byte
	return len(appendIDElems(b[:0], v, 1, form))
}

// appendRun appends the elements of a NEXTIDS reply of first ..
// first+n-1 in form to wbuf, and records them as its last run, so that a
// transport may drop what a full socket did not take of them and make it
// again (shed, refill). A transport that cannot tell when the socket is
// full (lazyRuns: TLS) gets the first refillChunk of them, the rest as it
// writes.
func (c *conn) appendRun(first int64, n int, form idForm) {
	if c.s.cfg.ClientOutputLimit == 0 {
		c.wbuf = appendIDElems(c.wbuf, first, n, form)
		return
	}
	m := n
	if c.lazyRuns {
		m = min(max(refillChunk/elemLen(first, form), 1), n)
	}
	c.wbuf = c.s.bufs.grow(c.wbuf, m*elemLen(first+int64(m-1), form))
	at := len(c.wbuf)
	c.wbuf = appendIDElems(c.wbuf, first, m, form)
	c.run = idRun{first: first, n: n, made: m, form: form, at: at, end: len(c.wbuf)}
}

// outputFull: the limit of replies waits in wbuf, or a run not made
// whole, which no reply may follow: the slice ends.
func (c *conn) outputFull() bool {
	l := c.s.cfg.ClientOutputLimit
	return l > 0 && (len(c.wbuf) >= l || c.run.made < c.run.n)
}

// shed is called when the socket filled having taken wbuf[:out]: it drops
// what wbuf holds of its last run past the element that holds byte out,
// when the run is the last reply in wbuf (refill makes it again). What is
// left of wbuf moves to the front of a buffer of its size, and the new
// offset of out, 0, is returned.
func (c *conn) shed(out int) int {
	r := &c.run
	if r.n == 0 || r.end != len(c.wbuf) || out >= r.end || r.next == r.made {
		return out
	}
	cut, next := r.at, r.next // wbuf[cut:] is dropped, elements next.. with it
	if out > r.at {
		w := elemLen(r.first+int64(r.next), r.form)
		if w == elemLen(r.first+int64(r.made-1), r.form) {
			k := (out - r.at) / w // the element holding byte out
			cut, next = r.at+(k+1)*w, next+k+1
		} else {
			// The run crosses a power of ten: only tiny IDs do.
			for cut <= out {
				cut += elemLen(r.first+int64(next), r.form)
				next++
			}
		}
		if cut >= r.end {
			return out
		}
	}
	// Most often what is kept is a part of one element: a buffer of its
	// size, not of writeBufSize, for a client that may never read it.
	keep := c.wbuf[out:cut]
	nb := append(make([]byte, 0, len(keep)), keep...)
	c.s.bufs.put(c.wbuf)
	c.wbuf = nb
	r.next, r.made, r.at, r.end = next, next, len(nb), len(nb)
	return 0
}

// refill makes the next chunk of a shed run in wbuf, once what was
// there is written; false: nothing is left to make.
func (c *conn) refill() bool {
	r := &c.run
	if r.made == r.n {
		return false
	}
	m := min(max(refillChunk/elemLen(r.first+int64(r.made), r.form), 1), r.n-r.made)
	c.wbuf = c.s.bufs.grow(c.wbuf[:0], m*elemLen(r.first+int64(r.made+m-1), r.form))
	c.wbuf = appendIDElems(c.wbuf, r.first+int64(r.made), m, r.form)
	r.next, r.made, r.at, r.end = r.made, r.made+m, 0, len(c.wbuf)
	return true
}

// outputWaiting is how many bytes of replies wait to reach the client:
// wbuf's from out, those of a shed run not made yet (at most), and those
// in the kernel's send queue not sent yet.
func (c *conn) outputWaiting(out int) int {
	n := len(c.wbuf) - out + c.t.unsent()
	if r := &c.run; r.made < r.n {
		n += (r.n - r.made) * elemLen(r.first+int64(r.n-1), r.form)
	}
	return n
}

// overOutputLimit: the socket has taken nothing since c.taken, outputStall
// ago or more, while more than the limit of replies waits. The transport
// closes the connection then (closedOverLimit).
func (c *conn) overOutputLimit(now time.Time, out int) bool {
	l := c.s.cfg.ClientOutputLimit
	return l > 0 && c.stalled && now.Sub(c.taken) >= outputStall && c.outputWaiting(out) > l
}

// stallDeadline is when a connection stalled at stalledAt must have been
// written to: WriteTimeout after the socket filled, or, while more than
// the limit waits, outputStall after the socket last took something.
func (c *conn) stallDeadline(stalledAt time.Time, out int) time.Time {
	d := stalledAt.Add(c.s.cfg.WriteTimeout)
	if l := c.s.cfg.ClientOutputLimit; l > 0 && c.outputWaiting(out) > l && c.taken.Add(outputStall).Before(d) {
		d = c.taken.Add(outputStall)
	}
	return d
}

// closedOverLimit counts a connection closed by its output limit and logs
// it: the first at once, then at most a line a minute with how many since.
func (c *conn) closedOverLimit(out int) {
	s := c.s
	s.m.outputLimit.Inc()
	if n, ok := s.outLog.due(time.Now()); ok {
		s.log.Warn("closed a connection that does not read its replies", "remote", c.nc.RemoteAddr(),
			"waiting_bytes", c.outputWaiting(out), "client_output_limit", s.cfg.ClientOutputLimit,
			"closed_since_last_line", n)
	}
}

// everyLog lets one log line through per outputLogEvery, counting the
// events it held back.
type everyLog struct {
	mu   sync.Mutex
	last time.Time
	held int
}

// due counts an event; ok: log it now, with n events held back since the
// last line, itself included.
func (e *everyLog) due(now time.Time) (n int, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.held++
	if !e.last.IsZero() && now.Sub(e.last) < outputLogEvery {
		return 0, false
	}
	n, e.held, e.last = e.held, 0, now
	return n, true
}
