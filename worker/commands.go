package worker

// cmdKind is a command's row in the command table; it indexes the
// per-command metrics. Row 0, cmdUnknown, stands for every name the table
// does not hold.
type cmdKind uint8

const cmdUnknown cmdKind = 0

// command is everything the server knows about one command.
type command struct {
	// name is the lower-case name, matched ignoring ASCII case; it is also
	// the command's metric label and its name in COMMAND's answer.
	name string
	// arity is Redis's convention: n means exactly n words, the name
	// included; -n means at least n.
	arity int
	// flag is COMMAND's flag for it: "write" (it issues IDs), "readonly"
	// or "fast".
	flag string
	// quit closes the connection once the reply is written.
	quit bool
	// noAuth lets a connection that has not authenticated send it (AUTH,
	// HELLO with its AUTH option, QUIT), as Redis does; every other
	// command is answered -NOAUTH while a password is required.
	noAuth bool
	// run executes a request whose arity was checked (args[0] is the name)
	// and appends its reply.
	run func(c *conn, args [][]byte) result
}

// commandTable holds the commands, indexed by cmdKind.
type commandTable []command

// newCommands is the command table: adding a command is one row here and
// its handler. The order is COMMAND's, and the order lookup tries.
func newCommands() commandTable {
	return commandTable{
		cmdUnknown: {name: "unknown"},
		{name: "ping", arity: -1, flag: "fast", run: (*conn).ping},
		{name: "nextid", arity: -1, flag: "write", run: (*conn).nextID},
		{name: "nextids", arity: -2, flag: "write", run: (*conn).nextIDs},
		{name: "nextrange", arity: -2, flag: "write", run: (*conn).nextRange},
		{name: "idformat", arity: -1, flag: "fast", run: (*conn).idFormatCmd},
		{name: "decode", arity: 2, flag: "readonly", run: (*conn).decode},
		{name: "idrange", arity: -3, flag: "readonly", run: (*conn).idRange},
		{name: "info", arity: -1, flag: "readonly", run: (*conn).info},
		{name: "quit", arity: -1, flag: "fast", quit: true, noAuth: true, run: (*conn).quit},
		// The rest lets redis-cli, redis-benchmark and client libraries
		// connect and introspect as they do with Redis (compat.go).
		{name: "hello", arity: -1, flag: "fast", noAuth: true, run: (*conn).hello},
		{name: "command", arity: -1, flag: "fast", run: (*conn).command},
		{name: "client", arity: -2, flag: "fast", run: (*conn).client},
		{name: "select", arity: 2, flag: "fast", run: (*conn).selectDB},
		{name: "config", arity: -2, flag: "fast", run: (*conn).config},
		{name: "auth", arity: -2, flag: "fast", noAuth: true, run: (*conn).auth},
		{name: "echo", arity: 2, flag: "fast", run: (*conn).echo},
	}
}

// lookup finds a command by name, ignoring ASCII case, without allocating
// and whatever the name's length: a linear scan, in which a row of another
// length costs one comparison.
func (t commandTable) lookup(name []byte) cmdKind {
	for k := 1; k < len(t); k++ {
		if equalFold(name, t[k].name) {
			return cmdKind(k)
		}
	}
	return cmdUnknown
}

// arityOK checks argc (the name included) against the command's arity.
func (cmd *command) arityOK(argc int) bool {
	if cmd.arity >= 0 {
		return argc == cmd.arity
	}
	return argc >= -cmd.arity
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
	// resWait is no result: the request waits for the generator's next
	// millisecond and runs again (conn.noWait); it is not counted.
	resWait = numResults + 1
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
