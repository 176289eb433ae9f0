package resp

// Reply codes: the first word of an error reply, what a client branches on.
const (
	// CodeNoLease: the worker holds no lease it may issue IDs under now
	// (claiming, standby, past its ceiling, sealed, clock skew): another
	// worker can serve.
	CodeNoLease = "NOLEASE"
	// CodeClockBack: the worker's clock is behind its last issued
	// timestamp; another worker can serve.
	CodeClockBack = "CLOCKBACK"
	// CodeErr: the request was wrong; retrying elsewhere will not help.
	CodeErr = "ERR"
)

// SplitError splits an error reply line, without its '-' and CRLF, into its
// code and the message after the first space.
func SplitError(line string) (code, msg string) {
	for i := 0; i < len(line); i++ {
		if line[i] == ' ' {
			return line[:i], line[i+1:]
		}
	}
	return line, ""
}
