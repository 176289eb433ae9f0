// Command snowflakectl is the operator's tool for a snowfleet fleet: it
// encodes and decodes IDs, shows the slot map, draws IDs and benchmarks
// workers.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// command is one subcommand. run gets the arguments after the subcommand's
// name and returns the exit status: 0 ok, 1 failure, 2 bad usage or input,
// 3 (fleets) a subtree could not be read, so the scope is not verified.
type command struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
	// exitUnverified: fleets found no overlap, but ZooKeeper refused it a
	// subtree (its ACL), so a fleet in it went unseen.
	exitUnverified = 3
)

func commands() map[string]command {
	return map[string]command{
		"encode": {summary: "build an ID from its fields", run: runEncode},
		"decode": {summary: "split IDs into their fields", run: runDecode},
		"range":  {summary: "the smallest and largest ID of a time window (offline)", run: runRange},
		"audit":  {summary: "check a table's IDs (a file or stdin): issued twice, outside the fleet's datacenters, impossible; exit 1 on any", run: runAudit},
		"slots":  {summary: "show the live slot map from ZooKeeper", run: runSlots},
		"init":   {summary: "make a fleet's root owning --datacenters ranges (refused when another fleet owns one)", run: runInit},
		"fleets": {summary: "list every fleet of the ensembles given; exit 1 on an overlap (the region check)", run: runFleets},
		"next":   {summary: "fetch IDs from the fleet", run: runNext},
		"bench":  {summary: "benchmark workers with pipelined NEXTID/NEXTIDS", run: runBench},
		"repair": {summary: "re-create slot nodes deleted by hand, with a reservation (asks first)",
			run: func(args []string, stdout, stderr io.Writer) int {
				return runRepair(args, stdinInput(), stdout, stderr)
			}},
		"recover": {summary: "after a restore of ZooKeeper from a backup: raise every slot past what the fleet could have issued (asks first)",
			run: func(args []string, stdout, stderr io.Writer) int {
				return runRecover(args, stdinInput(), stdout, stderr)
			}},
		"secure": {summary: "set the ACLs of a fleet's tree to the operator/worker/world scheme (asks first)",
			run: func(args []string, stdout, stderr io.Writer) int {
				return runSecure(args, stdinInput(), stdout, stderr)
			}},
		"health": {summary: "exit 0 when a worker's /readyz answers 200 (container health checks)", run: runHealth},
	}
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	cmds := commands()
	if len(args) == 0 {
		usage(stderr, cmds)
		return exitUsage
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help", "help":
		usage(stdout, cmds)
		return exitOK
	}
	c, ok := cmds[name]
	if !ok {
		fmt.Fprintf(stderr, "snowflakectl: unknown command %q (run 'snowflakectl help' for the list)\n", name)
		return exitUsage
	}
	return c.run(args[1:], stdout, stderr)
}

func usage(w io.Writer, cmds map[string]command) {
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintln(w, "usage: snowflakectl <command> [flags] [args]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'snowflakectl <command> -h' for a command's flags.")
}

// newFlagSet returns a flag set that reports errors through parse rather
// than printing the whole usage on every mistake.
func newFlagSet(name, synopsis, about string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "usage: snowflakectl %s %s\n\n%s\n\nflags:\n", name, synopsis, about)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses args; it returns -1 to go on, or the exit status: 0 after
// -h (usage on stdout), 2 after a bad flag (one line on stderr).
func parse(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) int {
	err := fs.Parse(args)
	if err == nil {
		return -1
	}
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(stdout)
		fs.Usage()
		return exitOK
	}
	fmt.Fprintf(stderr, "snowflakectl %s: %s\n", fs.Name(), strings.TrimSpace(err.Error()))
	return exitUsage
}

// usageError prints one line naming what was wrong and returns exitUsage.
func usageError(stderr io.Writer, cmd, format string, a ...any) int {
	fmt.Fprintf(stderr, "snowflakectl %s: %s\n", cmd, fmt.Sprintf(format, a...))
	return exitUsage
}
