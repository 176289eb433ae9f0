package worker

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/snowfleet/snowfleet/worker/resp"
)

// parseAll splits buf into requests as a connection does, feeding the parser
// step bytes more at a time (to exercise resuming); it returns the requests'
// arguments and the first error.
func parseAll(buf []byte, step int) ([][]string, error) {
	p := newParser()
	var out [][]string
	var argv [][]byte
	start, end := 0, 0
	for start < len(buf) {
		if end < len(buf) {
			end = min(end+step, len(buf))
		}
		n, err := p.parse(buf[start:end])
		if err != nil {
			return out, err
		}
		if n == 0 {
			if end == len(buf) {
				return out, errIncomplete
			}
			continue
		}
		argv = p.args(buf[start:end], argv)
		p.reset()
		if len(argv) > 0 {
			req := make([]string, len(argv))
			for i, a := range argv {
				req[i] = string(a)
			}
			out = append(out, req)
		}
		start += n
		end = max(end, start)
	}
	return out, nil
}

var errIncomplete = errors.New("incomplete request at end of input")

func TestParse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		want     [][]string
		err      string
	}{
		{"array", "*1\r\n$6\r\nNEXTID\r\n", [][]string{{"NEXTID"}}, ""},
		{"pipeline", "*2\r\n$7\r\nNEXTIDS\r\n$2\r\n16\r\n*1\r\n$4\r\nPING\r\n", [][]string{{"NEXTIDS", "16"}, {"PING"}}, ""},
		{"empty bulk", "*2\r\n$4\r\nPING\r\n$0\r\n\r\n", [][]string{{"PING", ""}}, ""},
		{"binary bulk", "*2\r\n$4\r\nPING\r\n$4\r\na\r\nb\r\n", [][]string{{"PING", "a\r\nb"}}, ""},
		{"empty arrays skipped", "*0\r\n*-1\r\n*1\r\n$4\r\nPING\r\n", [][]string{{"PING"}}, ""},
		{"inline", "NEXTID\r\nnextids 4\n", [][]string{{"NEXTID"}, {"nextids", "4"}}, ""},
		{"inline spaces", "  DECODE\t  12  \r\n", [][]string{{"DECODE", "12"}}, ""},
		{"inline quotes", `PING "hello world" 'a b'` + "\r\n", [][]string{{"PING", "hello world", "a b"}}, ""},
		{"inline empty lines", "\r\n\n \r\nPING\r\n", [][]string{{"PING"}}, ""},
		{"unbalanced quote", "PING \"abc\r\n", nil, "unbalanced quotes"},
		{"quote glued", "PING \"abc\"def\r\n", nil, "unbalanced quotes"},
		{"negative bulk", "*1\r\n$-1\r\n", nil, "invalid bulk length"},
		{"huge bulk", "*1\r\n$999999999999\r\n", nil, "invalid bulk length"},
		{"bulk past limit", fmt.Sprintf("*1\r\n$%d\r\n", MaxBulk+1), nil, "invalid bulk length"},
		{"huge array", "*99999\r\n", nil, "invalid multibulk length"},
		{"array past limit", fmt.Sprintf("*%d\r\n", MaxArgs+1), nil, "invalid multibulk length"},
		{"array garbage", "*abc\r\n", nil, "invalid multibulk length"},
		{"array no CR", "*1\n$4\r\nPING\r\n", nil, "invalid multibulk length"},
		{"array header too long", "*" + strings.Repeat("1", 40), nil, "too big mbulk count string"},
		{"bulk header too long", "*1\r\n$" + strings.Repeat("1", 40), nil, "too big bulk count string"},
		{"not a bulk", "*1\r\n:12\r\n", nil, "expected '$'"},
		{"bulk without CRLF", "*1\r\n$4\r\nPINGxx", nil, "expected CRLF"},
		{"bulk plus sign", "*1\r\n$+4\r\nPING\r\n", nil, "invalid bulk length"},
		{"frame past limit", "*3\r\n" + strings.Repeat(fmt.Sprintf("$%d\r\n%s\r\n", MaxBulk, strings.Repeat("x", MaxBulk)), 2), nil, "larger than"},
		{"inline too long", strings.Repeat("x", MaxInline+2), nil, "too big inline request"},
		{"inline too many args", strings.Repeat("a ", MaxArgs+1) + "\r\n", nil, "too many arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, step := range []int{1, 3, len(tc.in)} {
				got, err := parseAll([]byte(tc.in), step)
				if tc.err != "" {
					if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrProtocol) {
						t.Fatalf("step %d: err = %v, want %q", step, err, tc.err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				if fmt.Sprint(got) != fmt.Sprint(tc.want) {
					t.Fatalf("step %d: got %q, want %q", step, got, tc.want)
				}
			}
		})
	}
}

// An incomplete request is not an error: the parser waits for the rest.
func TestParseIncomplete(t *testing.T) {
	t.Parallel()
	full := "*2\r\n$7\r\nNEXTIDS\r\n$4\r\n4096\r\n"
	for i := 1; i < len(full); i++ {
		p := newParser()
		n, err := p.parse([]byte(full[:i]))
		if n != 0 || err != nil {
			t.Fatalf("prefix %q: n=%d err=%v, want 0, nil", full[:i], n, err)
		}
	}
}

// A request that fills MaxFrame and still lacks part of a bulk header can
// never complete: it is refused, not waited for (the read buffer cannot grow).
func TestParseFrameFullMidHeader(t *testing.T) {
	t.Parallel()
	bulk := func(k int) string { return "$" + strconv.Itoa(k) + "\r\n" + strings.Repeat("x", k) + "\r\n" }
	head := "*4\r\n$4\r\nECHO\r\n" + bulk(MaxBulk)
	// A second argument sized so that the frame reaches MaxFrame-2 bytes,
	// then the first two bytes of the third argument's header.
	k := MaxFrame - 2 - len(head) - len(bulk(0))
	for len(head)+len(bulk(k)) > MaxFrame-2 {
		k--
	}
	buf := []byte(head + bulk(k) + "$1")
	if len(buf) != MaxFrame {
		t.Fatalf("test frame is %d bytes, want %d", len(buf), MaxFrame)
	}
	p := newParser()
	n, err := p.parse(buf)
	if n != 0 || !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("parse of a full frame ending mid-header: n=%d err=%v, want the too-big protocol error", n, err)
	}
}

func TestParseZeroAlloc(t *testing.T) {
	buf := []byte("*2\r\n$7\r\nNEXTIDS\r\n$4\r\n4096\r\nNEXTID\r\n")
	p := newParser()
	cmds := newCommands()
	var argv [][]byte = make([][]byte, 0, 4)
	allocs := testing.AllocsPerRun(1000, func() {
		off := 0
		for off < len(buf) {
			n, err := p.parse(buf[off:])
			if err != nil || n == 0 {
				t.Fatalf("parse: %d %v", n, err)
			}
			argv = p.args(buf[off:], argv)
			p.reset()
			off += n
		}
		if cmds[cmds.lookup(argv[0])].name != "nextid" {
			t.Fatal("lookup")
		}
	})
	if allocs != 0 {
		t.Fatalf("parse allocates %.1f times per run, want 0", allocs)
	}
}

// FuzzParse: whatever the bytes, the parser does not panic, stays within
// its limits without allocating past them, and what it parses re-encodes to
// a RESP request that parses back to the same arguments.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"*1\r\n$6\r\nNEXTID\r\n",
		"*2\r\n$7\r\nNEXTIDS\r\n$4\r\n4096\r\n",
		"*2\r\n$6\r\nDECODE\r\n$19\r\n1724551110457221119\r\n",
		"NEXTID\r\nPING \"a b\" 'c'\r\n",
		"*1\r\n$-1\r\n", "*99999999\r\n", "*1\r\n$99999999\r\n", "*0\r\n", "\r\n",
		"*2\r\n$4\r\nPING\r\n$0\r\n\r\n", "*1\r\n:1\r\n", "$4\r\nPING\r\n", "PING \"x\r\n",
		"*3\r\n$6\r\nCLIENT\r\n$7\r\nSETNAME\r\n$1\r\nx\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p := newParser()
		p.offs = make([]int32, 0, 2*MaxArgs)
		var argv [][]byte
		off := 0
		for off < len(data) {
			var n int
			var err error
			allocs := testing.AllocsPerRun(1, func() {
				q := p
				q.offs = q.offs[:len(p.offs)]
				n, err = q.parse(data[off:])
			})
			if allocs != 0 {
				t.Fatalf("parse allocated %.0f times", allocs)
			}
			n, err = p.parse(data[off:])
			if err != nil {
				if !errors.Is(err, ErrProtocol) {
					t.Fatalf("error %v is not a protocol error", err)
				}
				return
			}
			if n == 0 {
				return // incomplete
			}
			if n > len(data)-off || n > MaxFrame+1 {
				t.Fatalf("consumed %d of %d bytes", n, len(data)-off)
			}
			if cap(p.offs) > 2*MaxArgs || p.argc() > MaxArgs {
				t.Fatalf("%d arguments, offsets cap %d", p.argc(), cap(p.offs))
			}
			argv = p.args(data[off:], argv)
			p.reset()
			for _, a := range argv {
				if len(a) > max(MaxBulk, MaxInline) {
					t.Fatalf("argument of %d bytes", len(a))
				}
			}
			off += n
			if len(argv) == 0 {
				continue
			}
			enc := appendCommand(nil, argv...)
			again, err := parseAll(enc, len(enc))
			if err != nil {
				// Re-encoding may only fail on the frame limit, which
				// inline requests are not held to byte for byte.
				if !strings.Contains(err.Error(), "larger than") {
					t.Fatalf("re-encoded %q: %v", enc, err)
				}
				continue
			}
			if len(again) != 1 || len(again[0]) != len(argv) {
				t.Fatalf("re-encoded %q parsed as %q", enc, again)
			}
			for i := range argv {
				if !bytes.Equal([]byte(again[0][i]), argv[i]) {
					t.Fatalf("arg %d: %q != %q", i, again[0][i], argv[i])
				}
			}
		}
	})
}

// appendCommand encodes args as a RESP array of bulk strings, as clients
// send them.
func appendCommand(dst []byte, args ...[]byte) []byte {
	dst = resp.AppendArrayHeader(dst, len(args))
	for _, a := range args {
		dst = resp.AppendBulk(dst, a)
	}
	return dst
}
