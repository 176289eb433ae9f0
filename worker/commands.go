package worker

// cmdKind is a command the server knows; it indexes the per-command metrics.
type cmdKind uint8

const (
	cmdUnknown cmdKind = iota
	cmdPing
	cmdNextID
	cmdNextIDs
	cmdDecode
	cmdInfo
	cmdQuit
	cmdHello
	cmdCommand
	cmdClient
	cmdSelect
	cmdConfig
	cmdAuth
	cmdEcho
	numCmds
)

// String is the command's lower-case name, its metric label.
func (k cmdKind) String() string {
	switch k {
	case cmdPing:
		return "ping"
	case cmdNextID:
		return "nextid"
	case cmdNextIDs:
		return "nextids"
	case cmdDecode:
		return "decode"
	case cmdInfo:
		return "info"
	case cmdQuit:
		return "quit"
	case cmdHello:
		return "hello"
	case cmdCommand:
		return "command"
	case cmdClient:
		return "client"
	case cmdSelect:
		return "select"
	case cmdConfig:
		return "config"
	case cmdAuth:
		return "auth"
	case cmdEcho:
		return "echo"
	}
	return "unknown"
}

// arity is Redis's convention: n means exactly n words with the name, -n
// at least n.
func (k cmdKind) arity() int {
	switch k {
	case cmdNextID:
		return 1
	case cmdNextIDs, cmdDecode, cmdSelect, cmdEcho:
		return 2
	case cmdClient, cmdConfig, cmdAuth:
		return -2
	}
	return -1
}

// arityOK checks argc (the name included) against the command's arity.
func (k cmdKind) arityOK(argc int) bool {
	a := k.arity()
	if a >= 0 {
		return argc == a
	}
	return argc >= -a
}

// lookup finds a command by name, case-insensitively, without allocating
// (a switch on string(bytes) of a stack array does not copy to the heap).
func lookup(name []byte) cmdKind {
	var a [8]byte
	if len(name) > len(a) {
		return cmdUnknown
	}
	for i, c := range name {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		a[i] = c
	}
	switch string(a[:len(name)]) {
	case "nextid":
		return cmdNextID
	case "nextids":
		return cmdNextIDs
	case "ping":
		return cmdPing
	case "decode":
		return cmdDecode
	case "info":
		return cmdInfo
	case "quit":
		return cmdQuit
	case "hello":
		return cmdHello
	case "command":
		return cmdCommand
	case "client":
		return cmdClient
	case "select":
		return cmdSelect
	case "config":
		return cmdConfig
	case "auth":
		return cmdAuth
	case "echo":
		return cmdEcho
	}
	return cmdUnknown
}

// equalFold reports whether b equals the lower-case ASCII word s, ignoring case.
func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

// result is how a request ended, a metric label.
type result uint8

const (
	resOK result = iota
	resError
	resNoLease
	resClockBack
	numResults
)

func (r result) String() string {
	switch r {
	case resOK:
		return "ok"
	case resError:
		return "error"
	case resNoLease:
		return "nolease"
	case resClockBack:
		return "clockback"
	}
	return "unknown"
}
