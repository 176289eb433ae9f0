package client

import (
	"strconv"
	"strings"

	"github.com/snowfleet/snowfleet/snowflake"
	"github.com/snowfleet/snowfleet/worker/resp"
)

// rangeSupport is what a Conn knows of its worker's NEXTRANGE.
type rangeSupport int8

const (
	rangesUnknown rangeSupport = iota // not asked yet: the next run tries NEXTRANGE
	rangesYes                         // answered a NEXTRANGE
	rangesNo                          // answered "unknown command": NEXTIDS from now on
)

// SendNextRange buffers a NEXTRANGE n; n is not checked here (the worker
// answers -ERR for a count outside 1..MaxBatch).
func (c *Conn) SendNextRange(n int) {
	var num [20]byte
	c.wbuf = resp.AppendArrayHeader(c.wbuf, 2)
	c.wbuf = resp.AppendBulkString(c.wbuf, "NEXTRANGE")
	c.wbuf = resp.AppendBulk(c.wbuf, strconv.AppendInt(num[:0], int64(n), 10))
}

// NextRange sends a NEXTRANGE n and reads its reply: the first of the n
// IDs first .. first+n-1 issued to this caller.
func (c *Conn) NextRange(n int) (int64, error) {
	c.SendNextRange(n)
	if err := c.Flush(); err != nil {
		return 0, err
	}
	return c.ReceiveNextRange(n)
}

// ReceiveNextRange reads the reply of a NEXTRANGE n: [first, n] with first
// positive, its n IDs all of one millisecond (the sequence field does not
// run past 4095 into the rest of the ID) and of the slot wanted; or a
// *ReplyError. The checks are those of NEXTIDS, made once for the run.
func (c *Conn) ReceiveNextRange(n int) (int64, error) {
	line, err := c.readLine()
	if err != nil {
		return 0, err
	}
	switch {
	case line[0] == '-':
		return 0, c.replyError(line[1:])
	case string(line) != "*2":
		return 0, c.protocol("NEXTRANGE %d answered %q, not a two-element array", n, line)
	}
	if line, err = c.readLine(); err != nil {
		return 0, err
	}
	if line[0] != ':' {
		return 0, c.protocol("NEXTRANGE %d answered a first ID %q, not an integer", n, line)
	}
	first, ok := resp.ParseInt(line[1:])
	if !ok || first <= 0 {
		return 0, c.protocol("NEXTRANGE %d answered a first ID %q, not a positive integer", n, line)
	}
	if line, err = c.readLine(); err != nil {
		return 0, err
	}
	if count, ok := resp.ParseInt(line[1:]); line[0] != ':' || !ok || count != int64(n) {
		return 0, c.protocol("NEXTRANGE %d answered a count of %q", n, line)
	}
	if seq := first & (1<<snowflake.SequenceBits - 1); seq+int64(n) > 1<<snowflake.SequenceBits {
		return 0, c.protocol("NEXTRANGE %d answered %d, whose sequence %d leaves no room for %d IDs in its millisecond", n, first, seq, n)
	}
	// The sequence does not carry: every ID of the run has first's slot.
	if err := c.checkSlot(first); err != nil {
		return 0, err
	}
	if err := c.ascend(first, first+int64(n)-1); err != nil {
		return 0, err
	}
	return first, nil
}

// run takes n consecutive IDs of one millisecond from the worker, first ..
// first+n-1: a NEXTRANGE n, or, on a worker that answers it with "unknown
// command" (one older than NEXTRANGE), a NEXTIDS n whose IDs must then be
// consecutive too. What the worker answered is kept for the Conn's life, so
// the fallback costs one round trip per connection; a worker upgraded in
// place is asked again on its next connection.
func (c *Conn) run(n int) (int64, error) {
	if c.ranges != rangesNo {
		first, err := c.NextRange(n)
		if err == nil {
			c.ranges = rangesYes
			return first, nil
		}
		if c.ranges == rangesYes || !unknownCommand(err) {
			return 0, err
		}
		c.ranges = rangesNo // -ERR keeps the connection: ask again with NEXTIDS
	}
	if cap(c.scratch) < n {
		c.scratch = make([]int64, n)
	}
	ids := c.scratch[:n]
	if err := c.NextN(ids); err != nil {
		return 0, err
	}
	for i, id := range ids {
		if id != ids[0]+int64(i) {
			return 0, c.protocol("NEXTIDS %d answered %d at %d after %d: not consecutive", n, id, i, ids[0])
		}
	}
	return ids[0], nil
}

// unknownCommand reports the reply of a worker (or any Redis server) that
// has no such command.
func unknownCommand(err error) bool {
	re, ok := err.(*ReplyError)
	return ok && re.Code == CodeErr && strings.HasPrefix(re.Message, "unknown command")
}
