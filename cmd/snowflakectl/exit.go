package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/go-zookeeper/zk"
)

// Exit statuses: the README's, for every command.
const (
	exitOK      = 0
	exitFailure = 1 // the command failed, or found what it looks for (audit, fleets)
	exitUsage   = 2 // bad usage or input: a flag, an argument, no terminal to confirm at
)

// usageError is bad usage or input: exit 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// usagef is a usage error saying what was wrong, naming the flag.
func usagef(format string, a ...any) error {
	return &usageError{fmt.Errorf(format, a...)}
}

// usage makes err a usage error.
func usage(err error) error { return &usageError{err} }

// exitStatus ends a command whose output has said why already (audit's
// findings, fleets' overlaps, decode's bad IDs): the status, nothing more
// on stderr.
type exitStatus int

func (s exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(s)) }

// hinted is an error with a second line saying what to do about it.
type hinted struct {
	err  error
	hint string
}

func (h *hinted) Error() string { return h.err.Error() }
func (h *hinted) Unwrap() error { return h.err }

// hintNoAuth adds hint to an error of ZooKeeper refusing the credentials:
// the message says what failed, the hint which flag is missing.
func hintNoAuth(err error, hint string) error {
	if errors.Is(err, zk.ErrNoAuth) {
		return &hinted{err, hint}
	}
	return err
}

// errNotConfirmed: a person at the terminal did not answer yes.
var errNotConfirmed = errors.New("not confirmed; nothing changed")

// exit is the one mapping from what a command returned to the process's
// status: it says err on stderr as cmd's ("snowflakectl cmd: ..."; cmd ""
// for snowflakectl itself), and its hint on a second line.
func exit(stderr io.Writer, cmd string, err error) int {
	var st exitStatus
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &st):
		return int(st)
	}
	prefix := "snowflakectl"
	if cmd != "" {
		prefix += " " + cmd
	}
	fmt.Fprintf(stderr, "%s: %v\n", prefix, err)
	var h *hinted
	if errors.As(err, &h) {
		fmt.Fprintf(stderr, "%s: %s\n", prefix, h.hint)
	}
	var ue *usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	return exitFailure
}
