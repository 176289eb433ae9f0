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

// confirm asks "<why> Go on? [y/N]" on stdout; anything but a yes is
// errNotConfirmed.
func (in input) confirm(stdout io.Writer, why string) error {
	fmt.Fprintf(stdout, "%s Go on? [y/N] ", why)
	line, _ := bufio.NewReader(in.r).ReadString('\n')
	if a := strings.ToLower(strings.TrimSpace(line)); a == "y" || a == "yes" {
		return nil
	}
	return errNotConfirmed
}

// mayAsk refuses, before anything is done, a command that will need a
// yes where nobody can give one (no --yes, and stdin no terminal).
func (c *ctl) mayAsk(yes bool) error {
	if !yes && !c.in.terminal {
		return usage(errNoTerminal)
	}
	return nil
}

// ask asks why at the terminal, unless --yes.
func (c *ctl) ask(yes bool, why string) error {
	if yes {
		return nil
	}
	return c.in.confirm(c.stdout, why)
}
