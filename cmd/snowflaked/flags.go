package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/peterbourgon/ff/v3"

	"github.com/snowfleet/snowfleet/cmd/internal/cliflag"
	"github.com/snowfleet/snowfleet/coordinator"
	"github.com/snowfleet/snowfleet/coordinator/zkconn"
	"github.com/snowfleet/snowfleet/snowflake"
	"github.com/snowfleet/snowfleet/snowflake/configerr"
	"github.com/snowfleet/snowfleet/snowflake/secretfile"
	"github.com/snowfleet/snowfleet/worker"
)

// options are the parsed flags. The flags of the two libraries are bound
// straight to their Config fields; the rest are the daemon's own.
type options struct {
	coord               coordinator.Config
	worker              worker.Config
	http                string
	logFormat, logLevel string
	showVersion         bool
	shutdownDelay       time.Duration
	fs                  *flag.FlagSet // what was parsed, for the values in errors
	// coordFlags and workerFlags map a Config field to the flag bound to it,
	// for errors from Validate.
	coordFlags, workerFlags map[string]string
	tls                     tlsOptions
	// httpIDs is --http-ids: the listener of IDs over HTTP ("" = off).
	httpIDs string
	// zkAuthFile is --zk-auth-file: the ZooKeeper credentials, read into
	// coord.Auth at start.
	zkAuthFile string
	// httpTokenFile is --http-token-file; httpTokens what it held at start.
	httpTokenFile string
	httpTokens    [][]byte
	// requirepassFile is --requirepass-file; passwords what it held at start.
	requirepassFile string
	passwords       [][]byte
}

// errHelp: -h was given and usage was printed; exit 0.
var errHelp = errors.New("help requested")

// errNoCredentials: neither ZooKeeper credentials nor --zk-insecure.
var errNoCredentials = errors.New("no ZooKeeper credentials: give --zk-auth-file (the worker's digest identity), or --zk-insecure to run on a world-writable tree (anyone reaching ZooKeeper can then cause duplicate IDs)")

// usageError is a bad flag value: exit 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return &usageError{fmt.Sprintf(format, a...)} }

// parseFlags reads flags from args and from SNOWFLAKE_<NAME> environment
// variables (a flag on the command line wins).
func parseFlags(args []string, stdout io.Writer) (*options, error) {
	o := &options{
		coord: coordinator.DefaultConfig(), worker: worker.DefaultConfig(), http: ":7610",
		logFormat: "text", logLevel: "info",
		coordFlags: map[string]string{}, workerFlags: map[string]string{},
	}
	fs := flag.NewFlagSet("snowflaked", flag.ContinueOnError)
	o.fs = fs
	fs.SetOutput(io.Discard)
	// A flag is added here and nowhere else: coord and work bind it to the
	// Config field of that name, so a Validate error about the field names
	// the flag.
	coord := func(field, name string) string { o.coordFlags[field] = name; return name }
	work := func(field, name string) string { o.workerFlags[field] = name; return name }
	c, w := &o.coord, &o.worker
	fs.Var(cliflag.NewAddrs(&c.Servers), coord("Servers", "zk"), "ZooKeeper servers, comma-separated `host:port` list")
	fs.StringVar(&c.Root, coord("Root", "zk-root"), c.Root, "root znode of the fleet (several fleets can share an ensemble when they own disjoint datacenters: snowflakectl init --datacenters)")
	fs.StringVar(&c.Auth, coord("Auth", "zk-auth"), c.Auth, "ZooKeeper digest auth as user:password; nodes are then writable by it only (default none; prefer --zk-auth-file: an argument shows in ps)")
	fs.StringVar(&o.zkAuthFile, "zk-auth-file", "", "file holding the ZooKeeper digest credentials, one line user:password; must not be accessible to others (instead of --zk-auth)")
	fs.BoolVar(&c.Insecure, coord("Insecure", "zk-insecure"), c.Insecure, "run without ZooKeeper credentials: the fleet's tree is then world-writable and anyone reaching ZooKeeper can cause duplicate IDs; warned at start, exported as snowflake_coordinator_zk_insecure (without it, no credentials is refused)")
	fs.StringVar(&c.TLS.CertFile, coord("TLS.CertFile", "zk-tls-cert-file"), "", "PEM client certificate for ZooKeeper's secureClientPort; any --zk-tls-* turns TLS to ZooKeeper on (--zk then lists the secure ports); re-read at each new connection when changed")
	fs.StringVar(&c.TLS.KeyFile, coord("TLS.KeyFile", "zk-tls-key-file"), "", "PEM key of --zk-tls-cert-file")
	fs.StringVar(&c.TLS.CACertFile, coord("TLS.CACertFile", "zk-tls-ca-cert-file"), "", "PEM CA certificates the ZooKeeper servers' certificates are checked against (default: the system's)")
	fs.StringVar(&w.Listen, work("Listen", "listen"), w.Listen, "address of the ID service (Redis protocol); \"\" turns it off (with --tls-listen: TLS only)")
	fs.StringVar(&o.http, "http", o.http, "address of the admin HTTP server (/metrics /healthz /readyz /status)")
	fs.StringVar(&c.Advertise, coord("Advertise", "advertise"), c.Advertise, "address clients reach the ID service at, published in the lease node (default hostname:listen-port, or listen-ip:port when --listen names one address)")
	fs.IntVar(&c.Datacenter, coord("Datacenter", "datacenter"), c.Datacenter, "pin the worker to one datacenter's 32 slots, 0..31, one its fleet's root owns; -1 takes any slot of the fleet's datacenters")
	fs.IntVar(&c.ScanLimit, coord("ScanLimit", "zk-scan-limit"), c.ScanLimit, "ignored (deprecated): fleets are registered in /snowfleet-registry, not searched for")
	fs.Var(pathsFlag{&c.ScanSkip}, coord("ScanSkip", "zk-scan-skip"), "ignored (deprecated): fleets are registered in /snowfleet-registry, not searched for; still a `path` (absolute znode path), repeatable or comma-separated")
	fs.DurationVar(&c.SessionTimeout, coord("SessionTimeout", "session-timeout"), c.SessionTimeout, "ZooKeeper session timeout: how long a crashed worker keeps its slot")
	fs.DurationVar(&c.Renew, coord("Renew", "renew"), c.Renew, "how often the reservation in ZooKeeper is extended")
	fs.DurationVar(&c.Horizon, coord("Horizon", "horizon"), c.Horizon, "how far ahead of its clock the worker reserves timestamps: how long it serves without ZooKeeper")
	fs.DurationVar(&c.StandbyHorizon, coord("StandbyHorizon", "standby-horizon"), c.StandbyHorizon, "the horizon while a standby waits for a slot of this worker's range: a crashed worker's slot then passes on within about --session-timeout plus this; above --renew, at most --horizon, at least --max-clock-lead")
	fs.DurationVar(&c.MaxSkew, coord("MaxSkew", "max-skew"), c.MaxSkew, "largest clock skew against ZooKeeper's leader before the worker stops serving")
	fs.DurationVar(&c.ReleaseTimeout, coord("ReleaseTimeout", "release-timeout"), c.ReleaseTimeout, "bound on releasing the slot at shutdown when ZooKeeper is slow")
	fs.Var(clockBackFlag{&c.OnClockBack}, coord("OnClockBack", "on-clock-back"), "what a clock step back does: logical (go on from the last issued timestamp, within --max-clock-lead and the confirmed ceiling; stays ready) or refuse (-CLOCKBACK and not ready until the clock catches up)")
	fs.Var(sequenceStartFlag{&c.SequenceStart}, coord("SequenceStart", "sequence-start"), "the sequence each millisecond starts at: zero (every millisecond at 0) or spread (spread over the milliseconds, so that id % N shards evenly below one ID per millisecond; the cap is kept at full load)")
	fs.DurationVar(&c.MaxClockLead, coord("MaxClockLead", "max-clock-lead"), c.MaxClockLead, "with --on-clock-back logical: how far ahead of the clock IDs may be issued, at most --horizon and --standby-horizon (further would stall the worker while a standby waits)")
	fs.IntVar(&w.MaxConns, work("MaxConns", "max-conns"), w.MaxConns, "most client connections open at once; more are refused with -ERR max number of clients reached")
	fs.DurationVar(&w.IdleTimeout, work("IdleTimeout", "idle-timeout"), w.IdleTimeout, "close a client connection silent for this long (0 = never)")
	fs.DurationVar(&w.ReadTimeout, work("ReadTimeout", "read-timeout"), w.ReadTimeout, "drop a connection whose request is not complete this long after it started")
	fs.DurationVar(&w.WriteTimeout, work("WriteTimeout", "write-timeout"), w.WriteTimeout, "drop a connection that does not read its replies for this long")
	fs.IntVar(&w.ClientOutputLimit, work("ClientOutputLimit", "client-output-limit"), w.ClientOutputLimit, "Redis's client-output-buffer-limit, in bytes: no request of a connection runs while this much of its replies waits for its socket, and one whose socket takes nothing for 2 s while more waits is closed; a client that does not read costs about this much (0 = no limit)")
	fs.DurationVar(&w.DrainTimeout, work("DrainTimeout", "drain-timeout"), w.DrainTimeout, "at shutdown, how long in-flight requests get before connections are closed")
	fs.IntVar(&w.HTTPMaxConns, work("HTTPMaxConns", "http-max-conns"), w.HTTPMaxConns, "most admin HTTP connections open at once; more wait in the kernel's backlog until one closes")
	fs.IntVar(&w.HTTPMaxConnsPerAddr, work("HTTPMaxConnsPerAddr", "http-max-conns-per-addr"), w.HTTPMaxConnsPerAddr, "most admin HTTP connections open at once from one remote address; more from it are closed at once, so the probes get in")
	fs.IntVar(&w.HTTPIDsMaxConnsPerAddr, work("HTTPIDsMaxConnsPerAddr", "http-ids-max-conns-per-addr"), w.HTTPIDsMaxConnsPerAddr, "most --http-ids connections open at once from one remote address (a balancer is one); more from it are closed at once")
	fs.BoolVar(&w.CloseOnNoLease, work("CloseOnNoLease", "close-on-nolease"), w.CloseOnNoLease, "close a client connection after answering -NOLEASE or -CLOCKBACK, so a client pooled behind a load balancer reconnects to a worker that serves")
	fs.Var(yesNoFlag{&w.ProtectedMode}, work("ProtectedMode", "protected-mode"), "Redis's protected-mode, `yes|no`; with yes and no --requirepass-file, clients of the ID port from other hosts than this one get -DENIED and a close (a TLS client with a verified certificate is served); no serves every host without a password, for a network nothing untrusted reaches")
	fs.DurationVar(&o.shutdownDelay, "shutdown-delay", 0, "after SIGTERM, how long /readyz answers 503 while IDs are still served, before the drain (give balancers time to drop the worker; 5s on Kubernetes)")
	fs.StringVar(&o.httpTokenFile, "http-token-file", "", "file holding the bearer token /status, /slots and /metrics require (one per line, two during a rotation, at least 16 bytes, not accessible to others; re-read on SIGHUP); /healthz and /readyz stay open (default none: all open)")
	fs.StringVar(&o.requirepassFile, "requirepass-file", "", "file holding the password clients must AUTH with (Redis's requirepass), one per line, two during a rotation; re-read on SIGHUP; must not be accessible to others (default none: AUTH accepts anything)")
	fs.StringVar(&o.tls.listen, "tls-listen", "", "address of the ID service over TLS, beside --listen (Redis's tls-port; default none)")
	fs.StringVar(&o.tls.files.CertFile, "tls-cert-file", "", "PEM certificate (chain) of the TLS listeners; reloaded when it changes")
	fs.StringVar(&o.tls.files.KeyFile, "tls-key-file", "", "PEM key of --tls-cert-file; reloaded when it changes")
	fs.StringVar(&o.tls.files.CACertFile, "tls-ca-cert-file", "", "PEM CA certificates that client certificates are checked against; reloaded when it changes")
	fs.StringVar(&o.tls.files.AuthClients, "tls-auth-clients", "yes", "client certificates, as Redis: yes (required: mutual TLS), optional (checked if sent), no")
	fs.BoolVar(&o.tls.httpTLS, "http-tls", false, "serve the admin HTTP port (--http) over TLS with the --tls-* files")
	fs.StringVar(&o.httpIDs, "http-ids", "", "address of IDs over HTTP (GET /id, GET /ids?count=N), never the admin port; behind the lease's readiness, --protected-mode, --requirepass-file (Authorization: Bearer; closed after 3 wrong), --max-conns, --http-ids-max-conns-per-addr and the timeouts (default none: off)")
	fs.BoolVar(&o.tls.idsTLS, "http-ids-tls", false, "serve --http-ids over TLS with the --tls-* files")
	fs.StringVar(&o.logFormat, "log-format", o.logFormat, "log format: text or json")
	fs.StringVar(&o.logLevel, "log-level", o.logLevel, "log level: trace, debug, info, warn, error")
	fs.Var(versionFlag{&o.showVersion}, "version", "print the version and exit")
	err := ff.Parse(fs, args, ff.WithEnvVarPrefix(cliflag.EnvPrefix))
	if errors.Is(err, flag.ErrHelp) {
		printUsage(fs, stdout)
		return o, errHelp
	}
	if err != nil {
		return o, usagef("%s", cliflag.ParseError(fs, err))
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
	for _, a := range []struct{ flag, v string }{{"listen", o.worker.Listen}, {"http", o.http}} {
		if a.flag == "listen" && a.v == "" {
			if o.tls.listen == "" {
				return o, usagef(`--listen "" turns the plaintext ID port off, and there is no --tls-listen: nothing would serve IDs`)
			}
			continue
		}
		if _, _, err := net.SplitHostPort(a.v); err != nil {
			return o, usagef("--%s %q: want host:port or :port (%v)", a.flag, a.v, err)
		}
	}
	if o.shutdownDelay < 0 || o.shutdownDelay > 10*time.Minute {
		return o, usagef("--shutdown-delay %v: want 0..10m", o.shutdownDelay)
	}
	if o.coord.Advertise != "" {
		if _, _, err := net.SplitHostPort(o.coord.Advertise); err != nil {
			return o, usagef("--advertise %q: want host:port (%v)", o.coord.Advertise, err)
		}
	}
	if err := o.checkHTTPIDs(); err != nil {
		return o, err
	}
	if err := o.tls.check(); err != nil {
		return o, err
	}
	if o.zkAuthFile != "" {
		if o.coord.Auth != "" {
			return o, usagef("--zk-auth and --zk-auth-file are both given; give one")
		}
		auth, err := zkconn.ReadAuthFile(o.zkAuthFile)
		if err != nil {
			return o, usagef("--zk-auth-file %q: %v", o.zkAuthFile, err)
		}
		o.coord.Auth = auth
	}
	if o.httpTokenFile != "" {
		toks, err := secretfile.ReadPasswords(o.httpTokenFile)
		if err != nil {
			return o, usagef("--http-token-file %q: %v", o.httpTokenFile, err)
		}
		o.httpTokens = toks
	}
	if o.requirepassFile != "" {
		pws, err := secretfile.ReadPasswords(o.requirepassFile)
		if err != nil {
			return o, usagef("--requirepass-file %q: %v", o.requirepassFile, err)
		}
		o.passwords = pws
	}
	// The library bounds these by the horizon and takes the lower value;
	// one asked for beyond it is a mistake worth saying (a default is not
	// asked for). The rules between the fields are Validate's (validate).
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["standby-horizon"] && o.coord.StandbyHorizon > o.coord.Horizon {
		return o, usagef("--standby-horizon %v is larger than --horizon %v: it shortens the reservation while a standby waits",
			o.coord.StandbyHorizon, o.coord.Horizon)
	}
	if set["max-clock-lead"] && o.coord.MaxClockLead > o.coord.Horizon {
		return o, usagef("--max-clock-lead %v is larger than --horizon %v: the logical clock can never lead the clock by more than the reservation",
			o.coord.MaxClockLead, o.coord.Horizon)
	}
	return o, nil
}

// clockBackFlag binds --on-clock-back to coordinator.Config.OnClockBack.
type clockBackFlag struct{ p *snowflake.ClockBackPolicy }

func (f clockBackFlag) String() string {
	if f.p == nil {
		return ""
	}
	return f.p.String()
}

func (f clockBackFlag) Set(s string) error {
	v, err := snowflake.ParseClockBackPolicy(s)
	if err != nil {
		return err
	}
	*f.p = v
	return nil
}

// sequenceStartFlag binds --sequence-start to coordinator.Config.SequenceStart.
type sequenceStartFlag struct{ p *snowflake.SequenceStart }

func (f sequenceStartFlag) String() string {
	if f.p == nil {
		return ""
	}
	return f.p.String()
}

func (f sequenceStartFlag) Set(s string) error {
	v, err := snowflake.ParseSequenceStart(s)
	if err != nil {
		return err
	}
	*f.p = v
	return nil
}

// pathsFlag appends to a []string field: the flag is repeatable, and a
// comma-separated value (one environment variable) adds each item.
type pathsFlag struct{ p *[]string }

func (f pathsFlag) String() string {
	if f.p == nil {
		return ""
	}
	return strings.Join(*f.p, ",")
}

func (f pathsFlag) Set(s string) error {
	for _, item := range strings.Split(s, ",") {
		*f.p = append(*f.p, strings.TrimSpace(item))
	}
	return nil
}

// yesNoFlag binds a Redis-style yes|no flag (--protected-mode) to a bool.
type yesNoFlag struct{ p *bool }

func (f yesNoFlag) String() string {
	switch {
	case f.p == nil:
		return ""
	case *f.p:
		return "yes"
	}
	return "no"
}

func (f yesNoFlag) Set(s string) error {
	switch strings.ToLower(s) {
	case "yes":
		*f.p = true
	case "no":
		*f.p = false
	default:
		return fmt.Errorf("want yes or no, got %q", s)
	}
	return nil
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

// validate checks both configs as the flags left them; an error names the
// flag and its value, then what Validate said about the field.
func (o *options) validate() error {
	for _, v := range []struct {
		validate func() error
		flags    map[string]string
	}{{o.coord.Validate, o.coordFlags}, {o.worker.Validate, o.workerFlags}} {
		err := v.validate()
		if err == nil {
			continue
		}
		var ce *configerr.Error
		if errors.As(err, &ce) && ce.Field == "Insecure" {
			return usagef("%v", errNoCredentials)
		}
		if errors.As(err, &ce) {
			if name, ok := v.flags[ce.Field]; ok {
				return usagef("--%s %s: %s", name, o.value(name), namingFlags(err.Error(), ce.Field, v.flags))
			}
		}
		return usagef("%v", err)
	}
	return nil
}

// namingFlags is msg, Validate's error about field, with the other
// fields it names replaced by their flags: "config StandbyHorizon 1s must
// exceed --renew 1s", so the message says every flag to change.
func namingFlags(msg, field string, flags map[string]string) string {
	head := "config " + field
	rest, ok := strings.CutPrefix(msg, head)
	if !ok {
		return msg
	}
	for f, name := range flags {
		if f == field || strings.Contains(f, ".") {
			continue
		}
		rest = regexp.MustCompile(`\b`+f+`\b`).ReplaceAllString(rest, "--"+name)
	}
	return head + rest
}

// value is the flag's value as parsed, for error messages: strings quoted,
// the auth secret hidden.
func (o *options) value(name string) string {
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
