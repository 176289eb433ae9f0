package worker

import (
	"encoding/binary"
	"strconv"

	"github.com/snowfleet/snowfleet/worker/resp"
)

// The commands below exist so that redis-cli, redis-benchmark and client
// libraries connect and introspect as they do with Redis; they touch no IDs.

func (c *conn) info(args [][]byte) result {
	sections := args[1:]
	for _, sec := range sections {
		if !equalFold(sec, "snowflake") && !equalFold(sec, "all") && !equalFold(sec, "default") &&
			!equalFold(sec, "everything") && !equalFold(sec, "server") {
			// Like Redis: an unknown section is an empty reply, not an error.
			continue
		}
		c.wbuf = resp.AppendBulk(c.wbuf, c.s.infoText())
		return resOK
	}
	if len(sections) == 0 {
		c.wbuf = resp.AppendBulk(c.wbuf, c.s.infoText())
		return resOK
	}
	c.wbuf = resp.AppendBulkString(c.wbuf, "")
	return resOK
}

// hello speaks RESP2 only: HELLO 3 is refused with NOPROTO, which clients
// (go-redis among them) take as "stay on RESP2".
func (c *conn) hello(args [][]byte) result {
	args = args[1:]
	var user, pw, name []byte
	if len(args) > 0 {
		v, ok := resp.ParseInt(args[0])
		if !ok {
			c.wbuf = resp.AppendError(c.wbuf, "ERR Protocol version is not an integer or out of range")
			return resError
		}
		if v != 2 {
			c.wbuf = resp.AppendError(c.wbuf, "NOPROTO sorry, this protocol version is not supported: snowflaked speaks RESP2 only")
			return resError
		}
		for i := 1; i < len(args); i++ {
			switch {
			case equalFold(args[i], "auth") && i+2 < len(args):
				user, pw = args[i+1], args[i+2]
				i += 2
			case equalFold(args[i], "setname") && i+1 < len(args):
				if !validName(args[i+1]) {
					c.wbuf = resp.AppendError(c.wbuf, badName)
					return resError
				}
				name = args[i+1]
				i++
			default:
				c.wbuf = resp.AppendQuotedError(c.wbuf, "ERR Syntax error in HELLO option ", args[i])
				return resError
			}
		}
	}
	// SETNAME takes effect only once the connection may run commands: an
	// unauthenticated one could otherwise name itself in CLIENT LIST.
	if !c.helloAuth(user, pw) {
		return resError
	}
	if name != nil {
		c.name = string(name)
	}
	c.wbuf = resp.AppendArrayHeader(c.wbuf, 14)
	c.wbuf = resp.AppendBulkString(c.wbuf, "server")
	c.wbuf = resp.AppendBulkString(c.wbuf, "snowflaked")
	c.wbuf = resp.AppendBulkString(c.wbuf, "version")
	c.wbuf = resp.AppendBulkString(c.wbuf, c.s.cfg.Version)
	c.wbuf = resp.AppendBulkString(c.wbuf, "proto")
	c.wbuf = resp.AppendInt(c.wbuf, 2)
	c.wbuf = resp.AppendBulkString(c.wbuf, "id")
	c.wbuf = resp.AppendInt(c.wbuf, c.id)
	c.wbuf = resp.AppendBulkString(c.wbuf, "mode")
	c.wbuf = resp.AppendBulkString(c.wbuf, "standalone")
	c.wbuf = resp.AppendBulkString(c.wbuf, "role")
	c.wbuf = resp.AppendBulkString(c.wbuf, "master")
	c.wbuf = resp.AppendBulkString(c.wbuf, "modules")
	c.wbuf = resp.AppendArrayHeader(c.wbuf, 0)
	return resOK
}

func (c *conn) command(args [][]byte) result {
	args = args[1:]
	switch {
	case len(args) == 0:
		listed := c.s.cmds[cmdUnknown+1:]
		c.wbuf = resp.AppendArrayHeader(c.wbuf, len(listed))
		for i := range listed {
			c.commandInfo(&listed[i])
		}
	case equalFold(args[0], "count"):
		c.wbuf = resp.AppendInt(c.wbuf, int64(len(c.s.cmds)-1))
	case equalFold(args[0], "info"):
		c.wbuf = resp.AppendArrayHeader(c.wbuf, len(args)-1)
		for _, name := range args[1:] {
			if k := c.s.cmds.lookup(name); k != cmdUnknown {
				c.commandInfo(&c.s.cmds[k])
			} else {
				c.wbuf = append(c.wbuf, "*-1\r\n"...)
			}
		}
	case equalFold(args[0], "docs"):
		// No documentation: redis-cli then shows no hints.
		c.wbuf = resp.AppendArrayHeader(c.wbuf, 0)
	default:
		c.unknownSub("command", args[0])
		return resError
	}
	return resOK
}

// commandInfo is one entry of COMMAND in Redis 7's ten-field form.
func (c *conn) commandInfo(cmd *command) {
	c.wbuf = resp.AppendArrayHeader(c.wbuf, 10)
	c.wbuf = resp.AppendBulkString(c.wbuf, cmd.name)
	c.wbuf = resp.AppendInt(c.wbuf, int64(cmd.arity))
	c.wbuf = resp.AppendArrayHeader(c.wbuf, 1)
	c.wbuf = resp.AppendSimple(c.wbuf, cmd.flag)
	c.wbuf = resp.AppendInt(c.wbuf, 0) // first key
	c.wbuf = resp.AppendInt(c.wbuf, 0) // last key
	c.wbuf = resp.AppendInt(c.wbuf, 0) // step
	for range 4 {                      // ACL categories, tips, key specs, subcommands
		c.wbuf = resp.AppendArrayHeader(c.wbuf, 0)
	}
}

// badName is Redis's error for a client name validName refuses.
const badName = "ERR Client names cannot contain spaces, newlines or special characters."

// validName is Redis's rule for a client name, whether CLIENT SETNAME or
// HELLO ... SETNAME sets it: printable ASCII, no spaces. A name is shown in
// CLIENT LIST and CLIENT INFO, one line per client, which a newline in it
// would forge.
func validName(name []byte) bool {
	// Eight bytes at a time: a 60 KiB name, sent over and over by a
	// hostile client, is checked in microseconds. A word is refused if a
	// byte has its top bit set, is 0x7f (adding 1 sets the top bit of a
	// byte below 0x80, with no carry out of it), or is below 0x21 (the
	// classic "has a byte less than n" test, exact for n <= 128).
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for len(name) >= 8 {
		x := binary.LittleEndian.Uint64(name)
		if (x|(x+ones)|((x-0x21*ones)&^x))&highs != 0 {
			return false
		}
		name = name[8:]
	}
	for _, b := range name {
		if b <= ' ' || b > '~' {
			return false
		}
	}
	return true
}

func (c *conn) client(args [][]byte) result {
	args = args[1:]
	sub := args[0]
	switch {
	case equalFold(sub, "setname") && len(args) == 2:
		if !validName(args[1]) {
			c.wbuf = resp.AppendError(c.wbuf, badName)
			return resError
		}
		if c.name != string(args[1]) { // the same name again costs no copy
			c.name = string(args[1])
		}
		c.wbuf = resp.AppendSimple(c.wbuf, "OK")
	case equalFold(sub, "getname") && len(args) == 1:
		if c.name == "" {
			c.wbuf = resp.AppendNil(c.wbuf)
		} else {
			c.wbuf = resp.AppendBulkString(c.wbuf, c.name)
		}
	case equalFold(sub, "id") && len(args) == 1:
		c.wbuf = resp.AppendInt(c.wbuf, c.id)
	case equalFold(sub, "setinfo") && len(args) == 3:
		c.wbuf = resp.AppendSimple(c.wbuf, "OK")
	case (equalFold(sub, "info") && len(args) == 1) || (equalFold(sub, "list") && len(args) == 1):
		c.clientLine()
	case equalFold(sub, "setname") || equalFold(sub, "getname") || equalFold(sub, "id") ||
		equalFold(sub, "setinfo") || equalFold(sub, "info") || equalFold(sub, "list"):
		c.wrongArgs("client|" + string(lower(sub)))
		return resError
	default:
		c.unknownSub("CLIENT", sub)
		return resError
	}
	return resOK
}

// config answers CONFIG GET for the two parameters redis-benchmark asks
// for (so it prints no warning), and nothing else.
func (c *conn) config(args [][]byte) result {
	args = args[1:]
	if !equalFold(args[0], "get") {
		c.unknownSub("CONFIG", args[0])
		return resError
	}
	if len(args) < 2 {
		c.wrongArgs("config|get")
		return resError
	}
	var pairs [][2]string
	for _, p := range args[1:] {
		switch {
		case equalFold(p, "save"):
			pairs = append(pairs, [2]string{"save", ""})
		case equalFold(p, "appendonly"):
			pairs = append(pairs, [2]string{"appendonly", "no"})
		}
	}
	c.wbuf = resp.AppendArrayHeader(c.wbuf, 2*len(pairs))
	for _, p := range pairs {
		c.wbuf = resp.AppendBulkString(c.wbuf, p[0])
		c.wbuf = resp.AppendBulkString(c.wbuf, p[1])
	}
	return resOK
}

func (c *conn) echo(args [][]byte) result {
	c.wbuf = resp.AppendBulk(c.wbuf, args[1])
	return resOK
}

func (c *conn) selectDB(args [][]byte) result {
	if n, ok := resp.ParseInt(args[1]); !ok || n != 0 {
		c.wbuf = resp.AppendError(c.wbuf, "ERR DB index is out of range (this server has only database 0)")
		return resError
	}
	c.wbuf = resp.AppendSimple(c.wbuf, "OK")
	return resOK
}

func (c *conn) unknownSub(cmd string, sub []byte) {
	c.wbuf = append(c.wbuf, "-ERR unknown subcommand '"...)
	c.wbuf = resp.AppendQuoted(c.wbuf, sub)
	c.wbuf = append(c.wbuf, "'. Try "...)
	c.wbuf = append(c.wbuf, cmd...)
	c.wbuf = append(c.wbuf, " HELP.\r\n"...)
}

func lower(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		out[i] = c
	}
	return out
}

// clientLine appends this connection's CLIENT LIST line as a bulk string,
// straight into wbuf: a name of 60 KiB is copied once, not three times.
func (c *conn) clientLine() {
	id := strconv.AppendInt(c.scratch[:0], c.id, 10)
	addr, laddr := c.nc.RemoteAddr().String(), c.nc.LocalAddr().String()
	n := len("id=") + len(id) + len(" addr=") + len(addr) + len(" laddr=") + len(laddr) +
		len(" name=") + len(c.name) + len(" db=0\n")
	c.wbuf = append(c.wbuf, '$')
	c.wbuf = strconv.AppendInt(c.wbuf, int64(n), 10)
	c.wbuf = append(c.wbuf, "\r\nid="...)
	c.wbuf = append(c.wbuf, id...)
	c.wbuf = append(c.wbuf, " addr="...)
	c.wbuf = append(c.wbuf, addr...)
	c.wbuf = append(c.wbuf, " laddr="...)
	c.wbuf = append(c.wbuf, laddr...)
	c.wbuf = append(c.wbuf, " name="...)
	c.wbuf = append(c.wbuf, c.name...)
	c.wbuf = append(c.wbuf, " db=0\n\r\n"...)
}
