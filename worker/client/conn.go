package client

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/snowfleet/snowfleet/snowflake"
	"github.com/snowfleet/snowfleet/worker/resp"
)

// MaxBatch is the most IDs one NEXTIDS may ask for.
const MaxBatch = snowflake.MaxBatch

// readBufSize holds a whole NEXTIDS 4096 reply (about 90 KB) in two reads.
const readBufSize = 64 << 10

// nextIDCmd is NEXTID as a RESP array of bulk strings.
var nextIDCmd = []byte("*1\r\n$6\r\nNEXTID\r\n")

// Conn is one RESP2 connection to one worker, with no discovery, pooling or
// retries: the building block of Client, exported for tools that pipeline.
// Requests are buffered by Send* and written by Flush; replies are read in
// order by Receive*. A Conn is not safe for concurrent use.
//
// After an I/O error or a *ProtocolError the Conn is Broken and must be
// closed; after a -ERR *ReplyError it stays usable, after a refusal
// (-NOLEASE, -CLOCKBACK) it is Broken too, since the worker closes it.
type Conn struct {
	addr   string
	nc     net.Conn
	r      *bufio.Reader
	wbuf   []byte
	broken bool
	used   time.Time // when the pool last handed it out
	// wantSlot is the slot index (datacenter<<5 | machine) every ID must
	// carry, the one of the lease node the worker was found by; -1: any
	// (a static list, a Conn dialed by hand).
	wantSlot int32
	// last is the highest ID this connection has returned, or that its
	// worker had returned on any connection when the request began: the
	// worker issues in ascending order, and a request sent after a reply is
	// answered after it, so every ID it returns now is above it (ascend).
	last int64
	// ranges is whether the worker answers NEXTRANGE (ranges.go); scratch
	// holds the NEXTIDS replies that stand in for it where it does not.
	ranges  rangeSupport
	scratch []int64
}

// slotShift and slotMask take a slot index out of an ID.
const (
	slotShift = snowflake.SequenceBits
	slotMask  = 1<<(snowflake.DatacenterBits+snowflake.MachineBits) - 1
)

// checkSlot is a *SlotError when id is not of the slot wanted.
func (c *Conn) checkSlot(id int64) error {
	if c.wantSlot < 0 || int32(id>>slotShift&slotMask) == c.wantSlot {
		return nil
	}
	c.broken = true // not pooled again: redialed once discovery has caught up
	return &SlotError{Addr: c.addr, Want: snowflake.SlotAt(int(c.wantSlot)), Got: snowflake.SlotAt(int(id >> slotShift & slotMask)), ID: id}
}

// ascend records that the connection returned first..last, and is an
// *OrderError when first is not above every ID it returned before: a
// worker repeating IDs (restored from a backup without recover, a clock
// gone back without its guard, or not a snowfleet worker at all).
func (c *Conn) ascend(first, last int64) error {
	if first <= c.last {
		c.broken = true
		return &OrderError{Addr: c.addr, Previous: c.last, ID: first}
	}
	c.last = last
	return nil
}

// Dial connects to a worker at addr (host:port) in plaintext, without a
// password; ctx bounds the dial. DialWith does TLS and AUTH.
func Dial(ctx context.Context, addr string) (*Conn, error) {
	return DialWith(ctx, addr, DialOptions{})
}

func newConn(addr string, nc net.Conn) *Conn {
	return &Conn{addr: addr, nc: nc, r: bufio.NewReaderSize(nc, readBufSize), wbuf: make([]byte, 0, 256), wantSlot: -1}
}

// noDeadline clears a deadline.
var noDeadline time.Time

// Addr is the worker's address.
func (c *Conn) Addr() string { return c.addr }

// Broken reports an I/O or protocol error: the Conn must not be reused.
func (c *Conn) Broken() bool { return c.broken }

// SetDeadline bounds the reads and writes that follow.
func (c *Conn) SetDeadline(t time.Time) error { return c.nc.SetDeadline(t) }

// Close closes the connection.
func (c *Conn) Close() error { return c.nc.Close() }

// SendNext buffers a NEXTID.
func (c *Conn) SendNext() { c.wbuf = append(c.wbuf, nextIDCmd...) }

// SendNextN buffers a NEXTIDS n; n is not checked here (the worker answers
// -ERR for a count outside 1..MaxBatch).
func (c *Conn) SendNextN(n int) {
	var num [20]byte
	c.wbuf = resp.AppendArrayHeader(c.wbuf, 2)
	c.wbuf = resp.AppendBulkString(c.wbuf, "NEXTIDS")
	c.wbuf = resp.AppendBulk(c.wbuf, strconv.AppendInt(num[:0], int64(n), 10))
}

// Flush writes the buffered requests.
func (c *Conn) Flush() error {
	if len(c.wbuf) == 0 {
		return nil
	}
	_, err := c.nc.Write(c.wbuf)
	c.wbuf = c.wbuf[:0]
	if err != nil {
		c.broken = true
		return fmt.Errorf("write to worker %s: %w", c.addr, err)
	}
	return nil
}

// Next sends a NEXTID and reads its reply.
func (c *Conn) Next() (int64, error) {
	c.SendNext()
	if err := c.Flush(); err != nil {
		return 0, err
	}
	return c.ReceiveNext()
}

// NextN sends a NEXTIDS len(dst) and reads the IDs into dst.
func (c *Conn) NextN(dst []int64) error {
	c.SendNextN(len(dst))
	if err := c.Flush(); err != nil {
		return err
	}
	return c.ReceiveNextN(dst)
}

// ReceiveNext reads the reply of a NEXTID: a positive integer, or a
// *ReplyError.
func (c *Conn) ReceiveNext() (int64, error) {
	line, err := c.readLine()
	if err != nil {
		return 0, err
	}
	switch line[0] {
	case ':':
		v, ok := resp.ParseInt(line[1:])
		if !ok || v <= 0 {
			return 0, c.protocol("NEXTID answered %q, not a positive integer", line)
		}
		if err := c.checkSlot(v); err != nil {
			return 0, err
		}
		if err := c.ascend(v, v); err != nil {
			return 0, err
		}
		return v, nil
	case '-':
		return 0, c.replyError(line[1:])
	}
	return 0, c.protocol("NEXTID answered %q, not an integer", line)
}

// ReceiveNextN reads the reply of a NEXTIDS len(dst) into dst: exactly
// len(dst) positive, strictly ascending integers, or a *ReplyError.
func (c *Conn) ReceiveNextN(dst []int64) error {
	line, err := c.readLine()
	if err != nil {
		return err
	}
	switch line[0] {
	case '*':
	case '-':
		return c.replyError(line[1:])
	default:
		return c.protocol("NEXTIDS answered %q, not an array", line)
	}
	n, ok := resp.ParseInt(line[1:])
	if !ok || n != int64(len(dst)) {
		return c.protocol("NEXTIDS %d answered an array of %q", len(dst), line[1:])
	}
	prev := int64(0)
	for i := range dst {
		line, err := c.readLine()
		if err != nil {
			return err
		}
		if line[0] != ':' {
			return c.protocol("NEXTIDS element %d is %q, not an integer", i, line)
		}
		v, ok := resp.ParseInt(line[1:])
		if !ok || v <= prev {
			return c.protocol("NEXTIDS element %d is %q after %d: not positive and ascending", i, line, prev)
		}
		dst[i], prev = v, v
	}
	if c.wantSlot >= 0 {
		// Every ID is looked at: a forged reply may mix slots.
		for _, v := range dst {
			if err := c.checkSlot(v); err != nil {
				return err
			}
		}
	}
	if len(dst) > 0 {
		return c.ascend(dst[0], dst[len(dst)-1])
	}
	return nil
}

// readLine returns the next reply line without its CRLF; the slice is valid
// until the next read.
func (c *Conn) readLine() ([]byte, error) {
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		c.broken = true
		if err == bufio.ErrBufferFull {
			return nil, c.protocol("a reply line longer than %d bytes", readBufSize)
		}
		return nil, fmt.Errorf("read from worker %s: %w", c.addr, err)
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return nil, c.protocol("reply line %q does not end in CRLF", line)
	}
	return line[:len(line)-2], nil
}

func (c *Conn) replyError(msg []byte) *ReplyError {
	code, text := resp.SplitError(string(msg))
	if code == resp.CodeNoLease || code == resp.CodeClockBack {
		// A worker that refuses closes the connection after the reply
		// (--close-on-nolease, the default): it is not pooled again, so
		// the next request after the backoff dials afresh instead of
		// failing on a dead socket.
		c.broken = true
	}
	return &ReplyError{Addr: c.addr, Code: code, Message: text}
}

func (c *Conn) protocol(format string, a ...any) *ProtocolError {
	c.broken = true
	return &ProtocolError{Addr: c.addr, Problem: fmt.Sprintf(format, a...)}
}
