package worker

import (
	"bytes"
	"errors"

	"github.com/snowfleet/snowfleet/worker/resp"
)

// Protocol limits. They are checked on the length headers before anything is
// read or allocated, so a client announcing a huge frame is refused at once.
const (
	// MaxBulk is the largest bulk string (one argument) accepted.
	MaxBulk = 64 << 10
	// MaxArgs is the most arguments one command may have.
	MaxArgs = 1024
	// MaxInline is the longest inline command line accepted.
	MaxInline = 64 << 10
	// MaxFrame is the largest whole request (headers and arguments); the read
	// buffer never grows past it.
	MaxFrame = 128 << 10
	// maxHeader is the longest *<n> or $<n> header line: '*', 10 digits, CRLF
	// and some slack.
	maxHeader = 32

	// AuthMaxArgs and AuthMaxBulk are Redis's limits (since CVE-2021-32675)
	// for a connection that has not authenticated while a password is set;
	// AuthMaxFrame bounds its whole request, and so its read buffer: AUTH
	// and HELLO … AUTH are small, and 1,600 connections each sending the
	// start of a 125 KB request no longer hold 200 MB.
	AuthMaxArgs  = 10
	AuthMaxBulk  = 16 << 10
	AuthMaxFrame = AuthMaxBulk + 1024
)

// ErrProtocol is matched (errors.Is) by every malformed-request error; the
// connection is answered "-ERR Protocol error: ..." and closed.
var ErrProtocol = errors.New("Protocol error")

// protoError is a protocol error. It is a small integer so that returning
// it as an error allocates nothing, whatever the input.
type protoError uint8

const (
	errMbulkLen protoError = iota + 1
	errBulkLen
	errBigMbulk
	errBigBulk
	errExpectedDlr
	errCRLF
	errBigInline
	errTooManyArgs
	errQuotes
	errBigFrame
	errUnauthMbulk
	errUnauthBulk
	errUnauthFrame
)

func (e protoError) Error() string        { return "Protocol error: " + e.reason() }
func (e protoError) Is(target error) bool { return target == ErrProtocol }

func (e protoError) reason() string {
	switch e {
	case errMbulkLen:
		return "invalid multibulk length"
	case errBulkLen:
		return "invalid bulk length"
	case errBigMbulk:
		return "too big mbulk count string"
	case errBigBulk:
		return "too big bulk count string"
	case errExpectedDlr:
		return "expected '$'"
	case errCRLF:
		return "expected CRLF"
	case errBigInline:
		return "too big inline request"
	case errTooManyArgs:
		return "too many arguments in inline request"
	case errQuotes:
		return "unbalanced quotes in request"
	case errBigFrame:
		return "request larger than the 131072-byte limit"
	case errUnauthMbulk:
		return "unauthenticated multibulk length"
	case errUnauthBulk:
		return "unauthenticated bulk length"
	case errUnauthFrame:
		return "unauthenticated request larger than the 17408-byte limit"
	}
	return "malformed request"
}

// parser splits requests, RESP arrays of bulk strings or inline commands, out
// of the start of a buffer. It works in place: arguments are offsets into
// the buffer, and it resumes where it stopped when a request arrives in
// several reads, so a trickled request costs linear time, not quadratic.
// The zero value is not ready; use newParser.
type parser struct {
	// nargs is the announced argument count of the array being parsed, -1
	// before its header, 0 for an inline command.
	nargs int
	// inline is set while an inline command is being read.
	inline bool
	// pos is how far into the frame parsing has got: past the header and
	// every complete argument, or, inline, how far '\n' was searched for.
	pos int
	// offs holds start, end offsets of each complete argument, relative to
	// the start of the frame, so they survive the buffer moving.
	offs []int32
	// unauth holds a request to the limits of an unauthenticated
	// connection (AuthMaxArgs, AuthMaxBulk, AuthMaxFrame); set by the
	// connection before each request.
	unauth bool
}

// maxFrame is the largest request the parser takes now.
func (p *parser) maxFrame() int {
	if p.unauth {
		return AuthMaxFrame
	}
	return MaxFrame
}

func newParser() parser { return parser{nargs: -1, offs: make([]int32, 0, 16)} }

func (p *parser) reset() {
	p.nargs, p.inline, p.pos, p.offs = -1, false, 0, p.offs[:0]
}

// started reports whether part of a request has been parsed (a request is
// half-written).
func (p *parser) started() bool { return p.nargs >= 0 || p.inline || p.pos > 0 }

// parse looks for one complete request at the start of buf (which holds the
// request's first byte at buf[0]). It returns:
//   - n > 0: a request of n bytes is complete; argc() arguments are in args.
//     A request with no arguments (an empty line, *0) has argc() == 0.
//   - n == 0, err == nil: more bytes are needed. A complete request is never
//     larger than MaxFrame.
//   - err != nil (ErrProtocol): the request is malformed.
func (p *parser) parse(buf []byte) (n int, err error) {
	if !p.started() {
		if len(buf) == 0 {
			return 0, nil
		}
		if buf[0] != '*' {
			p.inline = true
		}
	}
	if p.inline {
		return p.parseInline(buf)
	}
	if p.nargs < 0 {
		v, end, err := parseHeader(buf, '*', errBigMbulk, errMbulkLen)
		if err != nil || end == 0 {
			return 0, err
		}
		if v > MaxArgs {
			return 0, errMbulkLen
		}
		if p.unauth && v > AuthMaxArgs {
			return 0, errUnauthMbulk
		}
		if v <= 0 {
			// Redis ignores *0 and *-1 requests: consume them, no reply.
			p.reset()
			return end, nil
		}
		p.nargs, p.pos = int(v), end
	}
	for len(p.offs)/2 < p.nargs {
		rest := buf[p.pos:]
		if len(rest) > 0 && rest[0] != '$' {
			return 0, errExpectedDlr
		}
		v, hend, err := parseHeader(rest, '$', errBigBulk, errBulkLen)
		if err == nil && hend == 0 && len(buf) >= p.maxFrame() {
			// The buffer holds MaxFrame bytes and this header is not even
			// complete: the request cannot fit.
			return 0, errBigFrame
		}
		if err != nil || hend == 0 {
			return 0, err
		}
		if v < 0 || v > MaxBulk {
			return 0, errBulkLen
		}
		if p.unauth && v > AuthMaxBulk {
			return 0, errUnauthBulk
		}
		start := p.pos + hend
		end := start + int(v)
		if end+2 > p.maxFrame() {
			if p.unauth {
				return 0, errUnauthFrame
			}
			return 0, errBigFrame
		}
		if end+2 > len(buf) {
			return 0, nil
		}
		if buf[end] != '\r' || buf[end+1] != '\n' {
			return 0, errCRLF
		}
		p.offs = append(p.offs, int32(start), int32(end))
		p.pos = end + 2
	}
	n = p.pos
	p.nargs, p.pos = -1, 0
	return n, nil
}

// parseHeader parses "<kind><digits>\r\n" at the start of b. end == 0 with a
// nil error means the line is not complete yet.
func parseHeader(b []byte, kind byte, tooBig, bad protoError) (v int64, end int, err error) {
	lim := min(len(b), maxHeader)
	i := bytes.IndexByte(b[:lim], '\n')
	if i < 0 {
		if len(b) >= maxHeader {
			return 0, 0, tooBig
		}
		return 0, 0, nil
	}
	if i < 2 || b[i-1] != '\r' || b[0] != kind {
		return 0, 0, bad
	}
	v, ok := resp.ParseInt(b[1 : i-1])
	if !ok {
		return 0, 0, bad
	}
	return v, i + 1, nil
}

// parseInline reads a command written as a line of words, as telnet or
// `printf 'NEXTID\r\n' | nc` sends it. Words are split on spaces and tabs;
// a word may be wrapped in "double" or 'single' quotes to hold spaces (no
// escapes are interpreted).
func (p *parser) parseInline(buf []byte) (n int, err error) {
	maxLine, maxArgs := MaxInline, MaxArgs
	if p.unauth {
		maxLine, maxArgs = AuthMaxBulk, AuthMaxArgs
	}
	i := bytes.IndexByte(buf[p.pos:], '\n')
	if i < 0 {
		if len(buf) > maxLine {
			return 0, errBigInline
		}
		p.pos = len(buf)
		return 0, nil
	}
	i += p.pos
	if i > maxLine {
		return 0, errBigInline
	}
	line := i
	if line > 0 && buf[line-1] == '\r' {
		line--
	}
	p.offs = p.offs[:0]
	j := 0
	for j < line {
		c := buf[j]
		if c == ' ' || c == '\t' || c == '\r' {
			j++
			continue
		}
		if len(p.offs)/2 >= maxArgs {
			return 0, errTooManyArgs
		}
		if c == '"' || c == '\'' {
			k := bytes.IndexByte(buf[j+1:line], c)
			if k < 0 {
				return 0, errQuotes
			}
			end := j + 1 + k
			// Like Redis, a closing quote must end the word.
			if end+1 < line && buf[end+1] != ' ' && buf[end+1] != '\t' {
				return 0, errQuotes
			}
			p.offs = append(p.offs, int32(j+1), int32(end))
			j = end + 1
			continue
		}
		k := j
		for k < line && buf[k] != ' ' && buf[k] != '\t' && buf[k] != '\r' {
			k++
		}
		p.offs = append(p.offs, int32(j), int32(k))
		j = k
	}
	p.inline, p.pos, p.nargs = false, 0, -1
	return i + 1, nil
}

// argc is the number of arguments of the request parse completed last.
func (p *parser) argc() int { return len(p.offs) / 2 }

// args appends the arguments of the completed request, slices of frame (the
// buffer parse was given), to dst[:0] and returns it; the caller must reset
// the parser before the next request.
func (p *parser) args(frame []byte, dst [][]byte) [][]byte {
	dst = dst[:0]
	for i := 0; i+1 < len(p.offs); i += 2 {
		dst = append(dst, frame[p.offs[i]:p.offs[i+1]:p.offs[i+1]])
	}
	return dst
}
