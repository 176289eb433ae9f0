package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/peterbourgon/ff/v3"

	"github.com/snowfleet/snowfleet/coordinator"
	"github.com/snowfleet/snowfleet/worker"
)

// options are the parsed flags.
type options struct {
	zk, zkRoot, zkAuth        string
	listen, http, advertise   string
	datacenter                int
	sessionTimeout, renew     time.Duration
	horizon, maxSkew, release time.Duration
	maxConns                  int
	idle, read, write, drain  time.Duration
	logFormat, logLevel       string
	showVersion               bool
	fs                        *flag.FlagSet // what was parsed, for flagError
}

// errHelp: -h was given and usage was printed; exit 0.
var errHelp = errors.New("help requested")

// usageError is a bad flag value: exit 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// parseFlags reads flags from args and from SNOWFLAKE_<NAME> environment
// variables (a flag on the command line wins).
func parseFlags(args []string, stdout io.Writer) (options, error) {
	cd := coordinator.DefaultConfig()
	wd := worker.DefaultConfig()
	var o options
	fs := flag.NewFlagSet("snowflaked", flag.ContinueOnError)
	o.fs = fs
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.zk, "zk", strings.Join(cd.Servers, ","), "ZooKeeper servers, comma-separated host:port list")
	fs.StringVar(&o.zkRoot, "zk-root", cd.Root, "root znode of the fleet (several fleets can share an ensemble)")
	fs.StringVar(&o.zkAuth, "zk-auth", "", "ZooKeeper digest auth as user:password; nodes are then writable by it only (default none)")
	fs.StringVar(&o.listen, "listen", wd.Listen, "address of the ID service (Redis protocol)")
	fs.StringVar(&o.http, "http", ":7610", "address of the admin HTTP server (/metrics /healthz /readyz /status)")
	fs.StringVar(&o.advertise, "advertise", "", "address clients reach the ID service at, published in the lease node (default hostname:listen-port, or listen-ip:port when --listen names one address)")
	fs.IntVar(&o.datacenter, "datacenter", cd.Datacenter, "pin the worker to one datacenter's 32 slots, 0..31; -1 takes any slot")
	fs.DurationVar(&o.sessionTimeout, "session-timeout", cd.SessionTimeout, "ZooKeeper session timeout: how long a crashed worker keeps its slot")
	fs.DurationVar(&o.renew, "renew", cd.Renew, "how often the reservation in ZooKeeper is extended")
	fs.DurationVar(&o.horizon, "horizon", cd.Horizon, "how far ahead of its clock the worker reserves timestamps: how long it serves without ZooKeeper")
	fs.DurationVar(&o.maxSkew, "max-skew", cd.MaxSkew, "largest clock skew against ZooKeeper's leader before the worker stops serving")
	fs.DurationVar(&o.release, "release-timeout", cd.ReleaseTimeout, "bound on releasing the slot at shutdown when ZooKeeper is slow")
	fs.IntVar(&o.maxConns, "max-conns", wd.MaxConns, "most client connections open at once; more are refused with -ERR max number of clients reached")
	fs.DurationVar(&o.idle, "idle-timeout", wd.IdleTimeout, "close a client connection silent for this long (0 = never)")
	fs.DurationVar(&o.read, "read-timeout", wd.ReadTimeout, "drop a connection whose request is not complete this long after it started")
	fs.DurationVar(&o.write, "write-timeout", wd.WriteTimeout, "drop a connection that does not read its replies for this long")
	fs.DurationVar(&o.drain, "drain-timeout", wd.DrainTimeout, "at shutdown, how long in-flight requests get before connections are closed")
	fs.StringVar(&o.logFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&o.logLevel, "log-level", "info", "log level: trace, debug, info, warn, error")
	fs.Var(versionFlag{&o.showVersion}, "version", "print the version and exit")
	err := ff.Parse(fs, args, ff.WithEnvVarPrefix("SNOWFLAKE"))
	if errors.Is(err, flag.ErrHelp) {
		printUsage(fs, stdout)
		return o, errHelp
	}
	if err != nil {
		msg := err.Error()
		for _, p := range []string{"error parsing commandline arguments: ", "error parsing environment variables: "} {
			msg = strings.TrimPrefix(msg, p)
		}
		return o, usagef("%s", msg)
	}
	if fs.NArg() > 0 {
		return o, usagef("unexpected argument %q (snowflaked takes flags only; see --help)", fs.Arg(0))
	}
	if o.logFormat != "text" && o.logFormat != "json" {
		return o, usagef("--log-format %q: want text or json", o.logFormat)
	}
	if hclog.LevelFromString(o.logLevel) == hclog.NoLevel {
		return o, usagef("--log-level %q: want trace, debug, info, warn or error", o.logLevel)
	}
	for _, a := range []struct{ flag, v string }{{"listen", o.listen}, {"http", o.http}} {
		if _, _, err := net.SplitHostPort(a.v); err != nil {
			return o, usagef("--%s %q: want host:port or :port (%v)", a.flag, a.v, err)
		}
	}
	if o.advertise != "" {
		if _, _, err := net.SplitHostPort(o.advertise); err != nil {
			return o, usagef("--advertise %q: want host:port (%v)", o.advertise, err)
		}
	}
	return o, nil
}

// versionFlag is a boolean flag that only the command line sets: with
// SNOWFLAKE_VERSION in the environment (a build label, say) ff would set it
// too, and the daemon would print its version instead of serving.
type versionFlag struct{ v *bool }

func (f versionFlag) String() string {
	if f.v != nil && *f.v {
		return "true"
	}
	return "false"
}
func (f versionFlag) IsBoolFlag() bool { return true }
func (f versionFlag) Set(s string) error {
	*f.v = s == "true" || s == "1"
	return nil
}

func printUsage(fs *flag.FlagSet, w io.Writer) {
	fmt.Fprintf(w, `snowflaked serves Snowflake IDs over the Redis protocol for the slot it leases from ZooKeeper.

Usage: snowflaked [flags]

Every flag can also be set by the environment variable SNOWFLAKE_<NAME>, the
name upper-cased with dashes as underscores (--zk-root: SNOWFLAKE_ZK_ROOT); a
flag on the command line wins. Durations are Go durations: 500ms, 6s, 1m.

Flags:
`)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// flagOf maps a Config field, as Validate names it, to its flag.
func flagOf(field string) string {
	switch field {
	case "Servers":
		return "zk"
	case "Root":
		return "zk-root"
	case "Auth":
		return "zk-auth"
	case "Datacenter":
		return "datacenter"
	case "SessionTimeout":
		return "session-timeout"
	case "Renew":
		return "renew"
	case "Horizon":
		return "horizon"
	case "MaxSkew":
		return "max-skew"
	case "ReleaseTimeout":
		return "release-timeout"
	case "MaxConns":
		return "max-conns"
	case "IdleTimeout":
		return "idle-timeout"
	case "ReadTimeout":
		return "read-timeout"
	case "WriteTimeout":
		return "write-timeout"
	case "DrainTimeout":
		return "drain-timeout"
	}
	return ""
}

// flagError turns a Validate error ("config Horizon 500ms must exceed ...")
// into one naming the flag and its value.
func flagError(err error, o options) error {
	msg := err.Error()
	words := strings.Fields(strings.TrimPrefix(msg, "config "))
	if len(words) > 0 {
		if name := flagOf(strings.TrimSuffix(words[0], ":")); name != "" {
			return usagef("--%s %s: %s", name, o.value(name), msg)
		}
	}
	return usagef("%s", msg)
}

// value is the flag's value as parsed, for error messages: strings quoted,
// the auth secret hidden.
func (o options) value(name string) string {
	f := o.fs.Lookup(name)
	switch {
	case f == nil:
		return ""
	case name == "zk-auth":
		return `"(hidden)"`
	}
	if g, ok := f.Value.(flag.Getter); ok {
		if _, isString := g.Get().(string); isString {
			return strconv.Quote(f.Value.String())
		}
	}
	return f.Value.String()
}

// advertised is the address to publish for a bound listener: its port, and
// its host if it was bound to one address (127.0.0.1:0 publishes
// 127.0.0.1:<port>), else the machine's hostname.
func advertised(ln net.Addr) string {
	host, port, _ := net.SplitHostPort(ln.String())
	if ip := net.ParseIP(host); ip != nil && !ip.IsUnspecified() {
		return net.JoinHostPort(host, port)
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return net.JoinHostPort(host, port)
}
