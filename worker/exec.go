package worker

import (
	"time"

	"github.com/snowfleet/snowfleet/snowflake"
	"github.com/snowfleet/snowfleet/worker/resp"
)

// exec runs one request and appends its reply. It returns false when the
// connection must close after the reply (QUIT, a refusal with
// CloseOnNoLease), or when the request must wait for the generator
// (c.retry set, nothing appended, nothing counted).
func (c *conn) exec(args [][]byte) bool {
	k := c.s.cmds.lookup(args[0])
	cmd := &c.s.cmds[k]
	var res result
	switch {
	case !c.authed && c.gate(k):
		res = resError
	case k == cmdUnknown:
		c.wbuf = resp.AppendQuotedError(c.wbuf, "ERR unknown command ", args[0])
		res = resError
	case !cmd.arityOK(len(args)):
		c.wrongArgs(cmd.name)
		res = resError
	default:
		res = cmd.run(c, args)
		if res == resWait {
			return false
		}
	}
	c.s.m.requests[k][res].Inc()
	// Its latency is observed when its reply is written (flush): reading
	// the clock per request costs more than the request on a VM.
	c.pending[k]++
	return !cmd.quit && !c.refused && !c.closeAfter
}

func (c *conn) wrongArgs(name string) {
	c.wbuf = append(c.wbuf, "-ERR wrong number of arguments for '"...)
	c.wbuf = append(c.wbuf, name...)
	c.wbuf = append(c.wbuf, "' command\r\n"...)
}

// nextID is NEXTID [STRING|INTEGER|SHORT].
func (c *conn) nextID(args [][]byte) result {
	form, ok := c.idFormat("nextid", args[1:])
	if !ok {
		return resError
	}
	return c.issue(1, false, form)
}

// nextIDs is NEXTIDS <n> [STRING|INTEGER|SHORT].
func (c *conn) nextIDs(args [][]byte) result {
	n, ok := c.count(args[1])
	if !ok {
		return resError
	}
	form, ok := c.idFormat("nextids", args[2:])
	if !ok {
		return resError
	}
	return c.issue(n, true, form)
}

// idFormat reads the optional format word that ends an ID command:
// STRING, INTEGER or SHORT, any case; without one, the connection's
// IDFORMAT holds. A wrong word is answered here (ok false).
func (c *conn) idFormat(name string, rest [][]byte) (idForm, bool) {
	switch {
	case len(rest) == 0:
		return c.form, true
	case len(rest) > 1:
		c.wrongArgs(name)
		return 0, false
	}
	f, ok := parseIDForm(rest[0])
	if !ok {
		c.wbuf = resp.AppendQuotedError(c.wbuf, "ERR ID format must be STRING, INTEGER or SHORT, got ", rest[0])
	}
	return f, ok
}

// idFormatCmd is IDFORMAT [STRING|INTEGER|SHORT]: it sets the connection's
// default for NEXTID and NEXTIDS (+OK), so that a pool can set it once per
// connection; without an argument it answers the format in force.
func (c *conn) idFormatCmd(args [][]byte) result {
	if len(args) == 1 {
		c.wbuf = resp.AppendSimple(c.wbuf, c.form.String())
		return resOK
	}
	form, ok := c.idFormat("idformat", args[1:])
	if !ok {
		return resError
	}
	c.form = form
	c.wbuf = resp.AppendSimple(c.wbuf, "OK")
	return resOK
}

// take is the hot path every ID command shares (NEXTID, NEXTIDS,
// NEXTRANGE): one Ready check, one CAS in the generator, the IDs counted.
// It returns the first of n consecutive IDs of one millisecond, with
// resOK; otherwise the refusal is appended (or, resWait, nothing).
func (c *conn) take(n int) (int64, result) {
	l := c.s.lease
	g := l.Generator()
	// Ready is checked once per slice (execSlice), not per request: the
	// generator itself refuses, per ID, past the ceiling, with the clock
	// behind, or sealed; what only Ready knows (the skew) changes on the
	// scale of renewals.
	if !c.ready || g == nil {
		if !l.Ready() || g == nil {
			// The verdict, again, with what explains it; it may have
			// turned (a renewal landed) since Ready.
			if r := l.Readiness(); !r.Ready() {
				return 0, c.refuse(r)
			}
			if g = l.Generator(); g == nil {
				return 0, c.leaseReply(resNoLease, "this worker holds no lease; try another worker")
			}
		}
		c.ready = true
	}
	var first int64
	var err error
	if c.noWait {
		// The loop's side of the rule (fairids.go): a heavy request gives
		// way while light ones wait, parked (loop.park) meanwhile.
		ms := g.LastMs()
		if c.share.yield(&c.s.fair, ms, n) {
			c.retry, c.waitBig, c.yielded = bigDefer, true, true
			return 0, resWait
		}
		c.yielded = false
		first, c.retry, err = g.TryNextN(n)
		if c.retry > 0 {
			c.waitBig = !c.share.light(&c.s.fair, ms, n)
			return 0, resWait
		}
		if err == nil {
			c.share.took(&c.s.fair, n)
		}
	} else {
		first, err = c.s.fair.nextWaiting(&c.share, g, n)
	}
	if err != nil {
		return 0, c.idError(err)
	}
	c.s.m.ids.Add(float64(n))
	return first, resOK
}

// issue takes n IDs (take) and appends them straight into the write
// buffer, as RESP integers or, for clients whose numbers hold 53 bits, as
// decimal bulk strings, or in the short form.
func (c *conn) issue(n int, array bool, form idForm) result {
	first, res := c.take(n)
	if res != resOK {
		return res
	}
	switch {
	case array:
		// The run grows wbuf once; the transport may drop what a full
		// socket did not take of it and make it again later (outlimit.go).
		c.wbuf = resp.AppendArrayHeader(c.wbuf, n)
		c.appendRun(first, n, form)
	case form == formShort:
		c.wbuf = appendShortIDs(c.wbuf, first, n, false)
	case form == formString:
		c.wbuf = resp.AppendBulkInt(c.wbuf, first)
	default:
		c.wbuf = resp.AppendInt(c.wbuf, first)
	}
	return resOK
}

func (c *conn) ping(args [][]byte) result {
	switch len(args) {
	case 1:
		c.wbuf = resp.AppendSimple(c.wbuf, "PONG")
	case 2:
		c.wbuf = resp.AppendBulk(c.wbuf, args[1])
	default:
		c.wrongArgs("ping")
		return resError
	}
	return resOK
}

// decode answers a flat field/value array, like HGETALL, so that
// redis-cli shows it as pairs and clients read it as a map.
func (c *conn) decode(args [][]byte) result {
	arg := args[1]
	id, ok := resp.ParseInt(arg)
	if len(arg) == snowflake.ShortLen {
		var err error
		if id, err = snowflake.ParseShort(string(arg)); err != nil {
			c.wbuf = resp.AppendQuotedError(c.wbuf, "ERR a 13-character id is the short form (Crockford base-32, 0000000000000..7ZZZZZZZZZZZZ), got ", arg)
			return resError
		}
	} else if !ok || id < 0 {
		c.wbuf = resp.AppendQuotedError(c.wbuf, "ERR id must be a non-negative 64-bit integer, got ", arg)
		return resError
	}
	f, _ := snowflake.Decode(id) // every non-negative int64 is an ID
	c.wbuf = resp.AppendArrayHeader(c.wbuf, 10)
	c.wbuf = resp.AppendBulkString(c.wbuf, "unix_ms")
	c.wbuf = resp.AppendInt(c.wbuf, f.UnixMs)
	c.wbuf = resp.AppendBulkString(c.wbuf, "time")
	c.wbuf = resp.AppendBulk(c.wbuf, f.Time().AppendFormat(c.scratch[:0], time.RFC3339Nano))
	c.wbuf = resp.AppendBulkString(c.wbuf, "datacenter")
	c.wbuf = resp.AppendInt(c.wbuf, int64(f.Datacenter))
	c.wbuf = resp.AppendBulkString(c.wbuf, "machine")
	c.wbuf = resp.AppendInt(c.wbuf, int64(f.Machine))
	c.wbuf = resp.AppendBulkString(c.wbuf, "sequence")
	c.wbuf = resp.AppendInt(c.wbuf, int64(f.Sequence))
	return resOK
}

func (c *conn) quit([][]byte) result {
	c.wbuf = resp.AppendSimple(c.wbuf, "OK")
	return resOK
}
