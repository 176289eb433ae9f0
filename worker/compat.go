package worker

import (
	"strconv"
)

// The commands below exist so that redis-cli, redis-benchmark and client
// libraries connect and introspect as they do with Redis; they touch no IDs.

func (c *conn) info(sections [][]byte) result {
	for _, sec := range sections {
		if !equalFold(sec, "snowflake") && !equalFold(sec, "all") && !equalFold(sec, "default") &&
			!equalFold(sec, "everything") && !equalFold(sec, "server") {
			// Like Redis: an unknown section is an empty reply, not an error.
			continue
		}
		c.wbuf = appendBulk(c.wbuf, c.s.infoText())
		return resOK
	}
	if len(sections) == 0 {
		c.wbuf = appendBulk(c.wbuf, c.s.infoText())
		return resOK
	}
	c.wbuf = appendBulkString(c.wbuf, "")
	return resOK
}

// hello speaks RESP2 only: HELLO 3 is refused with NOPROTO, which clients
// (go-redis among them) take as "stay on RESP2".
func (c *conn) hello(args [][]byte) result {
	if len(args) > 0 {
		v, ok := parseInt(args[0])
		if !ok {
			c.wbuf = appendError(c.wbuf, "ERR Protocol version is not an integer or out of range")
			return resError
		}
		if v != 2 {
			c.wbuf = appendError(c.wbuf, "NOPROTO sorry, this protocol version is not supported: snowflaked speaks RESP2 only")
			return resError
		}
		for i := 1; i < len(args); i++ {
			switch {
			case equalFold(args[i], "auth") && i+2 < len(args):
				i += 2 // no passwords: any credentials are accepted, as Redis does without one
			case equalFold(args[i], "setname") && i+1 < len(args):
				c.name = string(args[i+1])
				i++
			default:
				c.wbuf = appendQuotedError(c.wbuf, "ERR Syntax error in HELLO option ", args[i])
				return resError
			}
		}
	}
	c.wbuf = appendArrayHeader(c.wbuf, 14)
	c.wbuf = appendBulkString(c.wbuf, "server")
	c.wbuf = appendBulkString(c.wbuf, "snowflaked")
	c.wbuf = appendBulkString(c.wbuf, "version")
	c.wbuf = appendBulkString(c.wbuf, c.s.cfg.Version)
	c.wbuf = appendBulkString(c.wbuf, "proto")
	c.wbuf = appendInt(c.wbuf, 2)
	c.wbuf = appendBulkString(c.wbuf, "id")
	c.wbuf = appendInt(c.wbuf, c.id)
	c.wbuf = appendBulkString(c.wbuf, "mode")
	c.wbuf = appendBulkString(c.wbuf, "standalone")
	c.wbuf = appendBulkString(c.wbuf, "role")
	c.wbuf = appendBulkString(c.wbuf, "master")
	c.wbuf = appendBulkString(c.wbuf, "modules")
	c.wbuf = appendArrayHeader(c.wbuf, 0)
	return resOK
}

// listed are the commands COMMAND lists: all but cmdUnknown.
func listed() []cmdKind {
	ks := make([]cmdKind, 0, numCmds-1)
	for k := cmdUnknown + 1; k < numCmds; k++ {
		ks = append(ks, k)
	}
	return ks
}

func (c *conn) command(args [][]byte) result {
	switch {
	case len(args) == 0:
		ks := listed()
		c.wbuf = appendArrayHeader(c.wbuf, len(ks))
		for _, k := range ks {
			c.commandInfo(k)
		}
	case equalFold(args[0], "count"):
		c.wbuf = appendInt(c.wbuf, int64(numCmds-1))
	case equalFold(args[0], "info"):
		c.wbuf = appendArrayHeader(c.wbuf, len(args)-1)
		for _, name := range args[1:] {
			if k := lookup(name); k != cmdUnknown {
				c.commandInfo(k)
			} else {
				c.wbuf = append(c.wbuf, "*-1\r\n"...)
			}
		}
	case equalFold(args[0], "docs"):
		// No documentation: redis-cli then shows no hints.
		c.wbuf = appendArrayHeader(c.wbuf, 0)
	default:
		c.unknownSub("command", args[0])
		return resError
	}
	return resOK
}

// commandInfo is one entry of COMMAND in Redis 7's ten-field form.
func (c *conn) commandInfo(k cmdKind) {
	c.wbuf = appendArrayHeader(c.wbuf, 10)
	c.wbuf = appendBulkString(c.wbuf, k.String())
	c.wbuf = appendInt(c.wbuf, int64(k.arity()))
	flag := "fast"
	switch k {
	case cmdNextID, cmdNextIDs:
		flag = "write"
	case cmdDecode, cmdInfo:
		flag = "readonly"
	}
	c.wbuf = appendArrayHeader(c.wbuf, 1)
	c.wbuf = appendSimple(c.wbuf, flag)
	c.wbuf = appendInt(c.wbuf, 0) // first key
	c.wbuf = appendInt(c.wbuf, 0) // last key
	c.wbuf = appendInt(c.wbuf, 0) // step
	for range 4 {                 // ACL categories, tips, key specs, subcommands
		c.wbuf = appendArrayHeader(c.wbuf, 0)
	}
}

func (c *conn) client(args [][]byte) result {
	sub := args[0]
	switch {
	case equalFold(sub, "setname") && len(args) == 2:
		for _, b := range args[1] {
			if b <= ' ' || b > '~' {
				c.wbuf = appendError(c.wbuf, "ERR Client names cannot contain spaces, newlines or special characters.")
				return resError
			}
		}
		c.name = string(args[1])
		c.wbuf = appendSimple(c.wbuf, "OK")
	case equalFold(sub, "getname") && len(args) == 1:
		if c.name == "" {
			c.wbuf = appendNil(c.wbuf)
		} else {
			c.wbuf = appendBulkString(c.wbuf, c.name)
		}
	case equalFold(sub, "id") && len(args) == 1:
		c.wbuf = appendInt(c.wbuf, c.id)
	case equalFold(sub, "setinfo") && len(args) == 3:
		c.wbuf = appendSimple(c.wbuf, "OK")
	case (equalFold(sub, "info") && len(args) == 1) || (equalFold(sub, "list") && len(args) == 1):
		line := "id=" + strconv.FormatInt(c.id, 10) + " addr=" + c.nc.RemoteAddr().String() +
			" laddr=" + c.nc.LocalAddr().String() + " name=" + c.name + " db=0\n"
		c.wbuf = appendBulkString(c.wbuf, line)
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
	c.wbuf = appendArrayHeader(c.wbuf, 2*len(pairs))
	for _, p := range pairs {
		c.wbuf = appendBulkString(c.wbuf, p[0])
		c.wbuf = appendBulkString(c.wbuf, p[1])
	}
	return resOK
}

func (c *conn) unknownSub(cmd string, sub []byte) {
	c.wbuf = append(c.wbuf, "-ERR unknown subcommand '"...)
	c.wbuf = appendQuoted(c.wbuf, sub)
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
