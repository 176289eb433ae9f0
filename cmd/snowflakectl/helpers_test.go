package main

import (
	"io"

	"github.com/peterbourgon/ff/v3/ffcli"
)

// The commands by name, as the tests list them.
func commands() map[string]*ffcli.Command { return (&ctl{}).commands() }

// In-process runs of one command through run, the way main runs it: what
// it prints and the exit status its error maps to.

func runInit(args []string, stdout, stderr io.Writer) int {
	return runOne("init", args, input{}, stdout, stderr)
}
func runFleets(args []string, stdout, stderr io.Writer) int {
	return runOne("fleets", args, input{}, stdout, stderr)
}
func runSlots(args []string, stdout, stderr io.Writer) int {
	return runOne("slots", args, input{}, stdout, stderr)
}
func runNext(args []string, stdout, stderr io.Writer) int {
	return runOne("next", args, input{}, stdout, stderr)
}
func runBench(args []string, stdout, stderr io.Writer) int {
	return runOne("bench", args, input{}, stdout, stderr)
}
func runHealth(args []string, stdout, stderr io.Writer) int {
	return runOne("health", args, input{}, stdout, stderr)
}

func runRepair(args []string, in input, stdout, stderr io.Writer) int {
	return runOne("repair", args, in, stdout, stderr)
}

func runRecover(args []string, in input, stdout, stderr io.Writer) int {
	return runOne("recover", args, in, stdout, stderr)
}

func runSecure(args []string, in input, stdout, stderr io.Writer) int {
	return runOne("secure", args, in, stdout, stderr)
}

func decodeFrom(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runOne("decode", args, input{r: stdin}, stdout, stderr)
}

func auditFrom(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runOne("audit", args, input{r: stdin}, stdout, stderr)
}

func runOne(name string, args []string, in input, stdout, stderr io.Writer) int {
	return run(append([]string{name}, args...), in, stdout, stderr)
}
