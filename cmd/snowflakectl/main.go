// Command snowflakectl is the operator's tool for a snowfleet fleet: it
// encodes and decodes IDs, shows the slot map, draws IDs and benchmarks
// workers.
package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"strings"

	"github.com/snowfleet/snowfleet/cmd/internal/cliflag"
)

func main() { os.Exit(run(os.Args[1:], stdinInput(), os.Stdout, os.Stderr)) }

// run is one invocation: it parses args into the command they name, runs
// it, and maps what it returned to the exit status (exit).
func run(args []string, in input, stdout, stderr io.Writer) int {
	c := &ctl{in: in, stdout: stdout, stderr: stderr}
	root, cmds := c.root()
	name := "" // the command's, for its errors; "" is snowflakectl's own
	if len(args) > 0 {
		if _, ok := cmds[args[0]]; ok {
			name = args[0]
			if name == "decode" {
				args = append(args[:1:1], idsAfterFlags(args[1:])...)
			}
		} else if !strings.HasPrefix(args[0], "-") && args[0] != "help" {
			// Here rather than in root's Exec: ffcli would take "ENCODE"
			// for encode, and command names are exact.
			return exit(stderr, "", unknownCommand(args[0]))
		}
	}
	if err := root.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usageOf := root
			if name != "" {
				usageOf = cmds[name]
			}
			io.WriteString(stdout, usageOf.UsageFunc(usageOf))
			return exitOK
		}
		if name == "" {
			return exit(stderr, "", unknownCommand(args[0]))
		}
		return exit(stderr, name, usage(errors.New(strings.TrimSpace(cliflag.ParseError(cmds[name].FlagSet, err)))))
	}
	return exit(stderr, name, root.Run(context.Background()))
}
