package zklayout

import (
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/hashicorp/go-hclog"

	"github.com/snowfleet/snowfleet/coordinator/zkconn"
	"github.com/snowfleet/snowfleet/snowflake/configerr"
	"github.com/snowfleet/snowfleet/snowflake/tlsfiles"
)

// ZKConfig is how a program reaches a fleet's tree: the ensemble, the root,
// the credentials, TLS and the session timeout. The coordinator embeds it,
// the Go client checks its own fields with it and snowflakectl its
// ZooKeeper flags, so the rules for reaching ZooKeeper are written here
// only.
type ZKConfig struct {
	// Servers are the ZooKeeper servers, host:port each.
	Servers []string
	// Root is the fleet's root znode; several fleets can share an ensemble
	// under different roots when their datacenter ranges are disjoint.
	Root string
	// Auth is the ZooKeeper digest identity, "user:password", or "" for
	// none (the fleet's nodes are world-readable; what a writer without it
	// may do is up to the program: the coordinator requires Insecure).
	Auth string
	// TLS names the PEM files for ZooKeeper's secureClientPort; with any
	// set, every connection to Servers is TLS (the servers' certificates
	// must name the host dialed), and the files are re-read on each new
	// connection when they changed. Servers must then list the secure ports.
	TLS tlsfiles.Files
	// SessionTimeout is the ZooKeeper session timeout asked for. Pin the
	// server's min/maxSessionTimeout so it is granted as asked.
	SessionTimeout time.Duration
}

// MinSessionTimeout and MaxSessionTimeout bound ZKConfig.SessionTimeout:
// below 200ms a session could not outlast one slow call, and a session
// longer than 10m keeps a crashed holder's slot that long.
const (
	MinSessionTimeout = 200 * time.Millisecond
	MaxSessionTimeout = 10 * time.Minute
)

// DefaultZKConfig: one local server (127.0.0.1:2181), root /snowflake, no
// credentials, no TLS, a 6s session.
func DefaultZKConfig() ZKConfig {
	return ZKConfig{Servers: []string{"127.0.0.1:2181"}, Root: DefaultRoot, SessionTimeout: 6 * time.Second}
}

// Validate names the first field that is wrong, as a *configerr.Error
// whose Field is the ZKConfig field's name (TLS files as "TLS.CertFile",
// ...). It loads the TLS files, as a connection would.
func (c ZKConfig) Validate() error {
	if err := ValidateServers(c.Servers); err != nil {
		return err
	}
	if !ValidRoot(c.Root) {
		return &configerr.Error{Field: "Root", Value: c.Root, Reason: "must be an absolute znode path such as /snowflake (not /, no trailing /)"}
	}
	if _, _, err := zkconn.ParseAuth(c.Auth); err != nil {
		// No Value: it is a secret (ParseAuth's message redacts it).
		return &configerr.Error{Field: "Auth", Err: err}
	}
	if c.TLS.Enabled() {
		if err := zkconn.ValidateTLS(c.TLS, "TLS."); err != nil {
			return err
		}
	}
	if c.SessionTimeout < MinSessionTimeout || c.SessionTimeout > MaxSessionTimeout {
		return &configerr.Error{Field: "SessionTimeout", Value: c.SessionTimeout,
			Reason: fmt.Sprintf("is out of range %v..%v", MinSessionTimeout, MaxSessionTimeout)}
	}
	return nil
}

// ValidateServers holds one ensemble's server list to ZKConfig's rule for
// Servers (what snowflakectl fleets checks each ensemble it is given with):
// at least one, each host:port. An error is a *configerr.Error naming
// Servers, its Value the entry at fault.
func ValidateServers(servers []string) error {
	if len(servers) == 0 {
		return &configerr.Error{Field: "Servers", Reason: "empty; give at least one host:port"}
	}
	for _, s := range servers {
		if strings.TrimSpace(s) == "" {
			return &configerr.Error{Field: "Servers", Value: servers, Reason: "contains an empty address"}
		}
		if _, _, err := net.SplitHostPort(s); err != nil {
			return &configerr.Error{Field: "Servers", Value: s, Reason: "is not host:port", Err: err}
		}
	}
	return nil
}

// Dial opens a session with c's servers, credentials and TLS (zkconn.DialTLS),
// for the tools and clients that read the tree; the Coordinator opens its
// own.
func (c ZKConfig) Dial(log hclog.Logger) (*zk.Conn, error) {
	return zkconn.DialTLS(c.Servers, c.Auth, c.TLS, c.SessionTimeout, log)
}
