package worker

import (
	"github.com/snowfleet/snowfleet/snowflake"
	"github.com/snowfleet/snowfleet/worker/resp"
)

// nextRange is NEXTRANGE <n> [STRING|INTEGER|SHORT]: the IDs first..first+n-1,
// consecutive integers of one millisecond and one slot as NEXTIDS n gives,
// issued to this caller and answered as the two-element array [first, n].
// A whole millisecond then costs one short reply instead of 4,096 integers
// written and parsed again. Everything else is NEXTIDS's: the same take
// (gates, refusals, fairness, the ID counter), the same count limit, the
// same format word; STRING sends first as a decimal bulk string, so that a
// client whose numbers hold 53 bits does its arithmetic on the exact value,
// and so does SHORT: a range is for arithmetic, which the short form is not.
func (c *conn) nextRange(args [][]byte) result {
	n, ok := c.count(args[1])
	if !ok {
		return resError
	}
	form, ok := c.idFormat("nextrange", args[2:])
	if !ok {
		return resError
	}
	first, res := c.take(n)
	if res != resOK {
		return res
	}
	c.wbuf = resp.AppendArrayHeader(c.wbuf, 2)
	if form != formInteger {
		c.wbuf = resp.AppendBulkInt(c.wbuf, first)
	} else {
		c.wbuf = resp.AppendInt(c.wbuf, first)
	}
	c.wbuf = resp.AppendInt(c.wbuf, int64(n))
	return resOK
}

// count reads the count of NEXTIDS and NEXTRANGE, 1..MaxBatch; a bad one is
// answered here (ok false).
func (c *conn) count(arg []byte) (int, bool) {
	n, ok := resp.ParseInt(arg)
	if !ok || n < 1 || n > snowflake.MaxBatch {
		c.wbuf = resp.AppendQuotedError(c.wbuf, "ERR count must be an integer in 1..4096, got ", arg)
		return 0, false
	}
	return int(n), true
}
