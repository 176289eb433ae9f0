package worker

import "strconv"

// Reply encoders append RESP2 to a connection's write buffer. None of them
// allocates unless the buffer must grow.

func appendUint(dst []byte, v uint64) []byte { return strconv.AppendUint(dst, v, 10) }

func appendInt(dst []byte, v int64) []byte {
	dst = append(dst, ':')
	dst = strconv.AppendInt(dst, v, 10)
	return append(dst, '\r', '\n')
}

func appendArrayHeader(dst []byte, n int) []byte {
	dst = append(dst, '*')
	dst = strconv.AppendInt(dst, int64(n), 10)
	return append(dst, '\r', '\n')
}

func appendBulk(dst []byte, b []byte) []byte {
	dst = append(dst, '$')
	dst = strconv.AppendInt(dst, int64(len(b)), 10)
	dst = append(dst, '\r', '\n')
	dst = append(dst, b...)
	return append(dst, '\r', '\n')
}

func appendBulkString(dst []byte, s string) []byte {
	dst = append(dst, '$')
	dst = strconv.AppendInt(dst, int64(len(s)), 10)
	dst = append(dst, '\r', '\n')
	dst = append(dst, s...)
	return append(dst, '\r', '\n')
}

func appendNil(dst []byte) []byte { return append(dst, "$-1\r\n"...) }

func appendSimple(dst []byte, s string) []byte {
	dst = append(dst, '+')
	dst = append(dst, s...)
	return append(dst, '\r', '\n')
}

// appendError appends "-<msg>\r\n"; msg must hold no CR or LF (messages that
// quote a client's input go through appendQuoted).
func appendError(dst []byte, msg string) []byte {
	dst = append(dst, '-')
	dst = append(dst, msg...)
	return append(dst, '\r', '\n')
}

// maxQuoted is how much of a client's input an error message repeats.
const maxQuoted = 64

// appendQuoted appends b for an error or status line: at most maxQuoted
// bytes, with anything but printable ASCII (CR, LF above all, which would
// end the line) shown as \xNN, so a reply line can never be broken by what
// a client sent.
func appendQuoted(dst []byte, b []byte) []byte {
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

// appendQuotedError appends "-<prefix>'<arg>'\r\n", the client's input
// quoted safely: the shape of every error that repeats what was sent.
func appendQuotedError(dst []byte, prefix string, arg []byte) []byte {
	dst = append(dst, '-')
	dst = append(dst, prefix...)
	dst = append(dst, '\'')
	dst = appendQuoted(dst, arg)
	return append(dst, '\'', '\r', '\n')
}

// appendClean appends one of the server's own messages to a reply line,
// with any control byte turned into a space so the line cannot break.
func appendClean(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f {
			c = ' '
		}
		dst = append(dst, c)
	}
	return dst
}
