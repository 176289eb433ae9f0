package worker

import (
	"errors"

	"github.com/snowfleet/snowfleet/snowflake"
	"github.com/snowfleet/snowfleet/worker/resp"
)

// idRange is IDRANGE <from> <to> [STRING|INTEGER|SHORT]: the smallest and
// the largest ID, of any slot, whose timestamp lies in [from, to] (Unix ms
// or RFC 3339 times), as a two-element array in the request's form (or the
// connection's IDFORMAT). It needs no lease: it is arithmetic on the layout.
func (c *conn) idRange(args [][]byte) result {
	form, ok := c.idFormat("idrange", args[3:])
	if !ok {
		return resError
	}
	from, err := snowflake.ParseInstant("from", string(args[1]))
	if err != nil {
		c.wbuf = resp.AppendQuotedError(c.wbuf, "ERR from must be Unix milliseconds or an RFC 3339 time, got ", args[1])
		return resError
	}
	to, err := snowflake.ParseInstant("to", string(args[2]))
	if err != nil {
		c.wbuf = resp.AppendQuotedError(c.wbuf, "ERR to must be Unix milliseconds or an RFC 3339 time, got ", args[2])
		return resError
	}
	first, last, err := snowflake.IDRange(from, to)
	if err != nil {
		var re *snowflake.RangeError
		if errors.As(err, &re) {
			err = re // the field, its value and the range; "id range:" adds nothing here
		}
		c.wbuf = resp.AppendCodeError(c.wbuf, "ERR", err.Error())
		return resError
	}
	c.wbuf = resp.AppendArrayHeader(c.wbuf, 2)
	for _, id := range [2]int64{first, last} {
		switch form {
		case formShort:
			c.wbuf = appendShortIDs(c.wbuf, id, 1, false)
		case formString:
			c.wbuf = resp.AppendBulkInt(c.wbuf, id)
		default:
			c.wbuf = resp.AppendInt(c.wbuf, id)
		}
	}
	return resOK
}
