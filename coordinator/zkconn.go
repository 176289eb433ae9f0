package coordinator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/hashicorp/go-hclog"
)

// Dial opens a ZooKeeper session for tools and clients (the Coordinator
// opens its own). auth is "user:password" for ZooKeeper digest auth, or ""
// to read as the world. The session is established in the background; calls
// wait for it.
func Dial(servers []string, auth string, sessionTimeout time.Duration, log hclog.Logger) (*zk.Conn, error) {
	if _, _, err := parseAuth(auth); err != nil {
		return nil, err
	}
	conn, err := dial(servers, sessionTimeout, log, nil)
	if err != nil || auth == "" {
		return conn, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), sessionTimeout+5*time.Second)
	defer cancel()
	if err := addAuth(ctx, conn, auth); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// dial opens a session without credentials; go-zookeeper's event channel
// is not used (cb, when set, sees every event).
func dial(servers []string, sessionTimeout time.Duration, log hclog.Logger, cb zk.EventCallback) (*zk.Conn, error) {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	if len(servers) == 0 {
		return nil, fmt.Errorf("dial zookeeper: no servers given")
	}
	conn, _, err := zk.Connect(servers, sessionTimeout,
		zk.WithLogger(zkLogger{log}), zk.WithLogInfo(false), zk.WithEventCallback(cb))
	if err != nil {
		return nil, fmt.Errorf("dial zookeeper %s: %w", strings.Join(servers, ","), err)
	}
	return conn, nil
}

// addAuth adds digest credentials, retrying while no server answers, until
// ctx ends. go-zookeeper remembers them and resends them on every reconnect.
func addAuth(ctx context.Context, conn *zk.Conn, auth string) error {
	for {
		errc := make(chan error, 1)
		go func() { errc <- conn.AddAuth("digest", []byte(auth)) }()
		var err error
		select {
		case err = <-errc:
		case <-ctx.Done():
			return fmt.Errorf("zookeeper digest auth: %w", ctx.Err())
		}
		if err == nil {
			return nil
		}
		if errors.Is(err, zk.ErrAuthFailed) {
			return fmt.Errorf("zookeeper digest auth: %w", err)
		}
		select {
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
			return fmt.Errorf("zookeeper digest auth: %w (last error: %v)", ctx.Err(), err)
		}
	}
}

// parseAuth splits "user:password".
func parseAuth(auth string) (user, password string, err error) {
	if auth == "" {
		return "", "", nil
	}
	user, password, ok := strings.Cut(auth, ":")
	if !ok || user == "" {
		return "", "", fmt.Errorf("zookeeper auth %q: want user:password", redact(auth))
	}
	return user, password, nil
}

func redact(auth string) string {
	if u, _, ok := strings.Cut(auth, ":"); ok {
		return u + ":***"
	}
	return "***"
}

// ACL is the ACL the fleet creates its nodes with: with auth, the fleet's
// digest identity may do everything and the world may only read (operators
// inspect, nobody else writes the slot map); without auth, the world may do
// everything.
func ACL(auth string) []zk.ACL {
	user, password, err := parseAuth(auth)
	if err != nil || user == "" {
		return zk.WorldACL(zk.PermAll)
	}
	return append(zk.DigestACL(zk.PermAll, user, password), zk.WorldACL(zk.PermRead)...)
}

// zkLogger sends go-zookeeper's messages to hclog at debug level: the
// library logs every reconnect attempt, and the Coordinator logs what matters.
type zkLogger struct{ log hclog.Logger }

func (l zkLogger) Printf(format string, args ...interface{}) {
	l.log.Debug("zookeeper client", "msg", fmt.Sprintf(format, args...))
}

// SplitAddrs splits a comma-separated host:port list, as --zk takes it,
// dropping blanks.
func SplitAddrs(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}
