package resp

import (
	"slices"
	"strconv"
)

// The encoders append RESP2 to a buffer (a connection's write buffer). None
// of them allocates unless the buffer must grow.

// AppendInt appends the integer reply ":<v>\r\n".
func AppendInt(dst []byte, v int64) []byte {
	dst = append(dst, ':')
	dst = strconv.AppendInt(dst, v, 10)
	return append(dst, '\r', '\n')
}

// AppendIntRun appends the n consecutive integers first, first+1, ...,
// first+n-1 (first >= 0) as RESP integers. A NEXTIDS reply is such a run,
// and strconv for each of 4,096 IDs was most of the worker's CPU under
// NEXTIDS 4096: here one line is kept in a small array, its decimal digits
// incremented in place (a carry rarely passes two digits), and copied out.
func AppendIntRun(dst []byte, first int64, n int) []byte {
	return appendRun(dst, first, n, false)
}

// AppendBulkIntRun appends the same run as decimal bulk strings
// ("$19\r\n2128468594658009000\r\n"): the reply of NEXTIDS n STRING, for
// clients whose numbers hold 53 bits (JavaScript), at the cost of
// AppendIntRun.
func AppendBulkIntRun(dst []byte, first int64, n int) []byte {
	return appendRun(dst, first, n, true)
}

// AppendBulkInt appends v in decimal as a bulk string.
func AppendBulkInt(dst []byte, v int64) []byte {
	var digits [20]byte
	return AppendBulk(dst, strconv.AppendInt(digits[:0], v, 10))
}

// appendRun appends first .. first+n-1 as integers or as bulk strings, by
// incrementing the digits of one line in place. Every line ends in its
// digits and CR LF, so the last digit is 3 bytes from the line's end. (A
// bool, not a func value: through an indirect call, line would escape.)
func appendRun(dst []byte, first int64, n int, bulk bool) []byte {
	if n <= 0 {
		return dst
	}
	var line [32]byte // "$19\r\n" or ':', at most 19 digits, CR LF
	w := len(appendOne(line[:0], first, bulk))
	if digits := decimalDigits(first); digits < 19 && first+int64(n-1) >= pow10(digits) {
		// The run crosses a power of ten (99 -> 100), which changes the
		// line's length: only IDs this small do, so the plain way is good
		// enough.
		for i := range int64(n) {
			dst = appendOne(dst, first+i, bulk)
		}
		return dst
	}
	at := len(dst)
	dst = slices.Grow(dst, n*w)[:at+n*w]
	for i := 0; i < n; i++ {
		copy(dst[at:at+w], line[:w])
		at += w
		d := w - 3 // the last digit; past the run's end a carry may reach the prefix, harmlessly
		for line[d] == '9' {
			line[d] = '0'
			d--
		}
		line[d]++
	}
	return dst
}

func appendOne(dst []byte, v int64, bulk bool) []byte {
	if bulk {
		return AppendBulkInt(dst, v)
	}
	return AppendInt(dst, v)
}

// decimalDigits is how many decimal digits v >= 0 has.
func decimalDigits(v int64) int {
	d := 1
	for ; v >= 10; v /= 10 {
		d++
	}
	return d
}

// pow10 is 10 to the power e, for e < 19.
func pow10(e int) int64 {
	p := int64(1)
	for range e {
		p *= 10
	}
	return p
}

// AppendArrayHeader appends "*<n>\r\n", the header of an array of n
// elements, which follow it.
func AppendArrayHeader(dst []byte, n int) []byte {
	dst = append(dst, '*')
	dst = strconv.AppendInt(dst, int64(n), 10)
	return append(dst, '\r', '\n')
}

// AppendBulk appends b as a bulk string.
func AppendBulk(dst []byte, b []byte) []byte {
	dst = append(dst, '$')
	dst = strconv.AppendInt(dst, int64(len(b)), 10)
	dst = append(dst, '\r', '\n')
	dst = append(dst, b...)
	return append(dst, '\r', '\n')
}

// AppendBulkString appends s as a bulk string.
func AppendBulkString(dst []byte, s string) []byte {
	dst = append(dst, '$')
	dst = strconv.AppendInt(dst, int64(len(s)), 10)
	dst = append(dst, '\r', '\n')
	dst = append(dst, s...)
	return append(dst, '\r', '\n')
}

// AppendNil appends the nil bulk string.
func AppendNil(dst []byte) []byte { return append(dst, "$-1\r\n"...) }

// AppendSimple appends the simple string "+<s>\r\n"; s must hold no CR
// or LF.
func AppendSimple(dst []byte, s string) []byte {
	dst = append(dst, '+')
	dst = append(dst, s...)
	return append(dst, '\r', '\n')
}

// AppendError appends "-<msg>\r\n"; msg must hold no CR or LF (messages that
// quote a client's input go through AppendQuoted).
func AppendError(dst []byte, msg string) []byte {
	dst = append(dst, '-')
	dst = append(dst, msg...)
	return append(dst, '\r', '\n')
}

// maxQuoted is how much of a client's input an error message repeats.
const maxQuoted = 64

// AppendQuoted appends b for an error or status line: at most maxQuoted
// bytes, with anything but printable ASCII (CR, LF above all, which would
// end the line) shown as \xNN, so a reply line can never be broken by what
// a client sent.
func AppendQuoted(dst []byte, b []byte) []byte {
	const hex = "0123456789abcdef"
	cut := len(b) > maxQuoted
	if cut {
		b = b[:maxQuoted]
	}
	for _, c := range b {
		if c < 0x20 || c >= 0x7f || c == '\\' {
			dst = append(dst, '\\', 'x', hex[c>>4], hex[c&15])
			continue
		}
		dst = append(dst, c)
	}
	if cut {
		dst = append(dst, "..."...)
	}
	return dst
}

// AppendQuotedError appends "-<prefix>'<arg>'\r\n", the client's input
// quoted safely: the shape of every error that repeats what was sent.
func AppendQuotedError(dst []byte, prefix string, arg []byte) []byte {
	dst = append(dst, '-')
	dst = append(dst, prefix...)
	dst = append(dst, '\'')
	dst = AppendQuoted(dst, arg)
	return append(dst, '\'', '\r', '\n')
}

// AppendClean appends one of the server's own messages to a reply line,
// with any control byte turned into a space so the line cannot break.
func AppendClean(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f {
			c = ' '
		}
		dst = append(dst, c)
	}
	return dst
}

// AppendCodeError appends "-<code> <msg>\r\n", msg cleaned as by
// AppendClean: the shape of the refusals (CodeNoLease, CodeClockBack) and
// of errors that carry one of the server's own messages.
func AppendCodeError(dst []byte, code, msg string) []byte {
	dst = append(dst, '-')
	dst = append(dst, code...)
	dst = append(dst, ' ')
	dst = AppendClean(dst, msg)
	return append(dst, '\r', '\n')
}
