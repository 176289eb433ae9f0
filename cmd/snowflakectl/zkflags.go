package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfleet/snowfleet/cmd/internal/cliflag"
	"github.com/snowfleet/snowfleet/coordinator/zkconn"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/snowflake/configerr"
)

// zkFlags are the ZooKeeper flags the commands that read or write a fleet's
// tree share; each reads the environment variable snowflaked reads for it
// (envFlags; the credentials at check). check holds them to
// zklayout.ZKConfig's rules, the ones the worker and the Go client are held
// to.
type zkFlags struct {
	servers, root, auth, authFile string
	tls                           zkTLSFlags
}

func (z *zkFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&z.servers, "zk", "127.0.0.1:2181",
		"ZooKeeper `servers`, comma-separated host:port (env SNOWFLAKE_ZK)")
	fs.StringVar(&z.root, "zk-root", zklayout.DefaultRoot,
		"the fleet's root `znode` (env SNOWFLAKE_ZK_ROOT)")
	// The environment's credentials are read at check, never shown as a
	// default in -h.
	fs.StringVar(&z.auth, "zk-auth", "",
		"ZooKeeper digest auth `user:password` (env SNOWFLAKE_ZK_AUTH); an argument shows in ps: prefer --zk-auth-file")
	fs.StringVar(&z.authFile, "zk-auth-file", "",
		"`file` holding the ZooKeeper digest credentials, one line user:password, not accessible to others (env SNOWFLAKE_ZK_AUTH_FILE)")
	z.tls.register(fs)
}

// check settles the credentials and validates the flags as a
// zklayout.ZKConfig; it returns the server list, or a usage error naming
// the flag.
func (z *zkFlags) check() ([]string, error) {
	if err := z.readAuth(); err != nil {
		return nil, err
	}
	zc := z.config(cliflag.SplitAddrs(z.servers), zklayout.DefaultZKConfig().SessionTimeout)
	if err := zc.Validate(); err != nil {
		return nil, flagError(err, z.flagOf)
	}
	return zc.Servers, nil
}

// flagOf is the flag of a zklayout.ZKConfig field.
func (z *zkFlags) flagOf(field string) string {
	switch field {
	case "Servers":
		return "zk"
	case "Root":
		return "zk-root"
	case "Auth":
		if z.authFile != "" {
			return "zk-auth-file"
		}
		return "zk-auth"
	}
	return zkTLSFlagName(strings.TrimPrefix(field, "TLS."))
}

// config is the flags as a zklayout.ZKConfig, for servers.
func (z *zkFlags) config(servers []string, sessionTimeout time.Duration) zklayout.ZKConfig {
	return zklayout.ZKConfig{Servers: servers, Root: z.root, Auth: z.auth, TLS: z.tls.files, SessionTimeout: sessionTimeout}
}

// dial opens a session with the checked flags.
func (z *zkFlags) dial(servers []string, sessionTimeout time.Duration) (*zk.Conn, error) {
	return z.config(servers, sessionTimeout).Dial(nil)
}

// flagError says a Validate error with the flag in place of the field:
// `--zk-root "x" must be an absolute znode path ...`.
func flagError(err error, flagOf func(field string) string) error {
	var ce *configerr.Error
	if !errors.As(err, &ce) {
		return err
	}
	return fmt.Errorf("--%s%s", flagOf(ce.Field), strings.TrimPrefix(ce.Error(), "config "+ce.Field))
}

// readAuth settles the ZooKeeper credentials: --zk-auth, or the file
// --zk-auth-file names, or else SNOWFLAKE_ZK_AUTH_FILE or
// SNOWFLAKE_ZK_AUTH from the environment. The pair is one setting, read
// here rather than flag by flag (envFlags): --zk-auth on the command line
// is not "both given" beside a file named in the environment, and the
// file wins over the environment's password.
func (z *zkFlags) readAuth() error {
	if z.auth != "" && z.authFile != "" {
		return errors.New("--zk-auth and --zk-auth-file are both given; give one")
	}
	if z.auth == "" && z.authFile == "" {
		z.authFile = os.Getenv("SNOWFLAKE_ZK_AUTH_FILE")
		if z.authFile == "" {
			z.auth = os.Getenv("SNOWFLAKE_ZK_AUTH")
		}
	}
	if z.authFile != "" {
		auth, err := zkconn.ReadAuthFile(z.authFile)
		if err != nil {
			return fmt.Errorf("--zk-auth-file %q: %w", z.authFile, err)
		}
		z.auth = auth
	}
	return nil
}

// session dials servers for a command that writes the tree, bounded by
// timeout as a whole (the session's own timeout at most 10 s): the
// connection, the context its calls run under, and what ends both.
func (z *zkFlags) session(ctx context.Context, servers []string, timeout time.Duration) (*zk.Conn, context.Context, func(), error) {
	conn, err := z.dial(servers, min(timeout, 10*time.Second))
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	return conn, ctx, func() { cancel(); conn.Close() }, nil
}
