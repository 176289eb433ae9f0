package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// input is where a command that changes the fleet (repair, recover) reads
// its confirmation; terminal says whether a person can answer there.
type input struct {
	r        io.Reader
	terminal bool
}

// stdinInput is the process's stdin, a terminal when it is a character
// device.
func stdinInput() input {
	st, err := os.Stdin.Stat()
	return input{r: os.Stdin, terminal: err == nil && st.Mode()&os.ModeCharDevice != 0}
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
