package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/snowfleet/snowfleet/cmd/internal/cliflag"
)

// ctl is one run of snowflakectl: where its commands read and write, and
// the flags those that reach ZooKeeper or workers share, registered into
// each of them (one command runs, so one set of values serves them all).
type ctl struct {
	in             input
	stdout, stderr io.Writer

	zk  zkFlags       // --zk, --zk-root, --zk-auth(-file), --zk-tls-*
	ids identityFlags // --zk-worker-auth-file, --zk-insecure
	sec secFlags      // --password-file, --tls-*: how next and bench reach workers
}

// commands are snowflakectl's commands by name.
func (c *ctl) commands() map[string]*ffcli.Command {
	list := []*ffcli.Command{
		c.encodeCommand(), c.decodeCommand(), c.rangeCommand(), c.auditCommand(),
		c.slotsCommand(), c.initCommand(), c.fleetsCommand(), c.nextCommand(), c.benchCommand(),
		c.repairCommand(), c.recoverCommand(), c.secureCommand(), c.healthCommand(),
		c.whoisCommand(), c.historyCommand(),
	}
	byName := make(map[string]*ffcli.Command, len(list))
	for _, cmd := range list {
		byName[cmd.Name] = cmd
	}
	return byName
}

// root is snowflakectl itself, with every command under it: alone, or with
// help, it lists them.
func (c *ctl) root() (*ffcli.Command, map[string]*ffcli.Command) {
	cmds := c.commands()
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	subs := make([]*ffcli.Command, 0, len(names))
	for _, n := range names {
		subs = append(subs, cmds[n])
	}
	fs := flag.NewFlagSet("snowflakectl", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	root := &ffcli.Command{
		Name:        "snowflakectl",
		FlagSet:     fs,
		Subcommands: subs,
		UsageFunc: func(root *ffcli.Command) string {
			var b strings.Builder
			fmt.Fprintln(&b, "usage: snowflakectl <command> [flags] [args]")
			fmt.Fprintln(&b)
			fmt.Fprintln(&b, "commands:")
			for _, sub := range root.Subcommands {
				fmt.Fprintf(&b, "  %-8s %s\n", sub.Name, sub.ShortHelp)
			}
			fmt.Fprintln(&b)
			fmt.Fprintln(&b, "Run 'snowflakectl <command> -h' for a command's flags.")
			return b.String()
		},
	}
	root.Exec = func(_ context.Context, args []string) error {
		switch {
		case len(args) == 0:
			io.WriteString(c.stderr, root.UsageFunc(root))
			return exitStatus(exitUsage)
		case args[0] == "help":
			io.WriteString(c.stdout, root.UsageFunc(root))
			return nil
		}
		return unknownCommand(args[0])
	}
	return root, cmds
}

func unknownCommand(name string) error {
	return usagef("unknown command %q (run 'snowflakectl help' for the list)", name)
}

// newFlagSet is a command's flag set: its errors are returned, and said
// in one line by exit, rather than printed with the whole usage.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// command makes the ffcli command of fs's flags: synopsis is its
// arguments, summary its line in the list of commands, about its -h text.
// Before exec runs, the flags that read the environment (envFlags) and
// were not on the command line are set from it.
func (c *ctl) command(fs *flag.FlagSet, synopsis, summary, about string, exec func(ctx context.Context, args []string) error) *ffcli.Command {
	return &ffcli.Command{
		Name:       fs.Name(),
		ShortUsage: synopsis,
		ShortHelp:  summary,
		LongHelp:   about,
		FlagSet:    fs,
		UsageFunc: func(cmd *ffcli.Command) string {
			var b strings.Builder
			fmt.Fprintf(&b, "usage: snowflakectl %s %s\n\n%s\n\nflags:\n", cmd.Name, cmd.ShortUsage, cmd.LongHelp)
			fs.SetOutput(&b)
			fs.PrintDefaults()
			fs.SetOutput(io.Discard)
			return b.String()
		},
		Exec: func(ctx context.Context, args []string) error {
			if err := cliflag.SetFromEnv(fs, envFlags()...); err != nil {
				return usage(err)
			}
			return exec(ctx, args)
		},
	}
}

// envFlags are the flags snowflakectl reads from the environment, each
// from SNOWFLAKE_<NAME> by snowflaked's rule (cliflag.SetFromEnv): the
// ZooKeeper flags and identities (--zk-auth and --zk-auth-file too, read
// as a pair by zkFlags.readAuth) and the workers' password, which name
// the same thing in both programs. No other flag does: inside a worker's
// container SNOWFLAKE_DATACENTER, SNOWFLAKE_HTTP or SNOWFLAKE_TLS_CERT_FILE
// are the worker's, and must not change what encode, health or next do.
func envFlags() []string {
	return []string{
		"zk", "zk-root", "zk-tls-cert-file", "zk-tls-key-file", "zk-tls-ca-cert-file",
		"zk-worker-auth-file", "zk-insecure", "password-file",
	}
}

// noArgs refuses arguments to a command that takes flags only.
func noArgs(args []string) error {
	if len(args) > 0 {
		return usagef("unexpected argument %q", args[0])
	}
	return nil
}

// warnf says on stderr, as cmd's, what does not end the command: a
// warning, or one item of several that failed while the others go on
// (the command then returns an exitStatus).
func (c *ctl) warnf(cmd, format string, a ...any) {
	fmt.Fprintf(c.stderr, "snowflakectl %s: %s\n", cmd, fmt.Sprintf(format, a...))
}
