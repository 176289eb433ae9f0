package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/mattn/go-isatty"
)

// input is where a command that changes the fleet (repair, recover) reads
// its confirmation; terminal says whether a person can answer there.
type input struct {
	r        io.Reader
	terminal bool
}

// stdinInput is the process's stdin.
func stdinInput() input { return inputFrom(os.Stdin) }

// inputFrom reads f, a terminal when isatty says so. A character device is
// not enough: /dev/null is one, and a script run with </dev/null would
// then be asked, read end-of-file and stop as "not confirmed" (exit 1)
// instead of being told to pass --yes (exit 2).
func inputFrom(f *os.File) input {
	fd := f.Fd()
	return input{r: f, terminal: isatty.IsTerminal(fd) || isatty.IsCygwinTerminal(fd)}
}

// errNoTerminal: confirmation asked for where nobody can answer.
var errNoTerminal = errors.New("refusing without confirmation: stdin is not a terminal; pass --yes from a script")

// confirm asks "<why> Go on? [y/N]" and reports a yes; a no is said on
// stderr as cmd's.
func (in input) confirm(stdout, stderr io.Writer, cmd, why string) bool {
	fmt.Fprintf(stdout, "%s Go on? [y/N] ", why)
	line, _ := bufio.NewReader(in.r).ReadString('\n')
	if a := strings.ToLower(strings.TrimSpace(line)); a == "y" || a == "yes" {
		return true
	}
	fmt.Fprintf(stderr, "snowflakectl %s: not confirmed; nothing changed\n", cmd)
	return false
}
