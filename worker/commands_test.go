package worker

import (
	"strings"
	"testing"

	"github.com/snowfleet/snowfleet/coordinator"
)

// TestCommandTable: every row is complete, and names are lower-case (lookup
// folds only the request's case) and unique.
func TestCommandTable(t *testing.T) {
	t.Parallel()
	cmds := newCommands()
	if cmds[cmdUnknown].name != "unknown" || cmds[cmdUnknown].run != nil {
		t.Fatalf("row 0 = %+v, want the unknown command's", cmds[cmdUnknown])
	}
	seen := map[string]bool{}
	for _, cmd := range cmds[1:] {
		if cmd.name == "" || cmd.name != strings.ToLower(cmd.name) || seen[cmd.name] {
			t.Errorf("name %q: empty, not lower-case or twice", cmd.name)
		}
		seen[cmd.name] = true
		if cmd.run == nil || cmd.arity == 0 || (cmd.flag != "write" && cmd.flag != "readonly" && cmd.flag != "fast") {
			t.Errorf("%s: incomplete row %+v", cmd.name, cmd)
		}
		if k := cmds.lookup([]byte(strings.ToUpper(cmd.name))); cmds[k].name != cmd.name {
			t.Errorf("lookup(%q) = %q", strings.ToUpper(cmd.name), cmds[k].name)
		}
	}
}

// TestLongCommandName: a command named longer than any today is found
// (lookup once copied names into an 8-byte buffer, so a 9-letter command
// answered "unknown command"), in any case and without allocating, through
// exec as well; a longer name that merely starts like it is unknown.
func TestLongCommandName(t *testing.T) {
	const long = "averyveryverylongcommandname"
	cmds := append(newCommands(), command{name: long, arity: 2, flag: "fast", run: (*conn).echo})
	for _, name := range []string{long, strings.ToUpper(long), "aVeryVeryVeryLongCommandName"} {
		if k := cmds.lookup([]byte(name)); cmds[k].name != long {
			t.Errorf("lookup(%q) = %q, want %q", name, cmds[k].name, long)
		}
	}
	for _, name := range []string{long + "x", long[:len(long)-1], strings.Repeat("x", 100000)} {
		if k := cmds.lookup([]byte(name)); k != cmdUnknown {
			t.Errorf("lookup(%.40q) = %q, want unknown", name, cmds[k].name)
		}
	}

	coord, err := coordinator.New(insecureCoordConfig(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(DefaultConfig(), coord, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.m, err = newMetrics(nil, cmds, &s.open, &s.accepted); err != nil {
		t.Fatal(err)
	}
	s.cmds = cmds
	c := newConn(s, nil, 1)
	args := [][]byte{[]byte(strings.ToUpper(long)), []byte("hi")}
	allocs := testing.AllocsPerRun(100, func() {
		c.wbuf = c.wbuf[:0]
		if !c.exec(args) || string(c.wbuf) != "$2\r\nhi\r\n" {
			t.Fatalf("%s hi = %q", args[0], c.wbuf)
		}
	})
	if allocs != 0 {
		t.Errorf("%s allocates %.1f times per request, want 0", args[0], allocs)
	}
	c.wbuf = c.wbuf[:0]
	c.exec([][]byte{[]byte(long + "x"), []byte("hi")})
	if got, want := string(c.wbuf), "-ERR unknown command '"+long+"x'\r\n"; got != want {
		t.Errorf("%sx hi = %q, want %q", long, got, want)
	}
}
