package zkconn

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/hashicorp/go-hclog"

	"github.com/snowfleet/snowfleet/snowflake/tlsfiles"
)

// Connect opens a session without credentials, over TLS when files name any;
// go-zookeeper's event channel is not used (cb, when set, sees every event).
func Connect(servers []string, files tlsfiles.Files, sessionTimeout time.Duration, log hclog.Logger, cb zk.EventCallback) (*zk.Conn, error) {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	if len(servers) == 0 {
		return nil, fmt.Errorf("dial zookeeper: no servers given")
	}
	opts := []func(*zk.Conn){zk.WithLogger(zkLogger{log}), zk.WithLogInfo(false), zk.WithEventCallback(cb)}
	withTLS, err := dialOption(files, sessionTimeout, log)
	if err != nil {
		return nil, fmt.Errorf("dial zookeeper: %w", err)
	}
	if withTLS != nil {
		opts = append(opts, withTLS)
	}
	// zk.Connect's option type is unexported: one option applies them all.
	conn, _, err := zk.Connect(servers, sessionTimeout, func(c *zk.Conn) {
		for _, o := range opts {
			o(c)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("dial zookeeper %s: %w", strings.Join(servers, ","), err)
	}
	return conn, nil
}

// AddAuth adds digest credentials, retrying while no server answers, until
// ctx ends. go-zookeeper remembers them and resends them on every reconnect.
func AddAuth(ctx context.Context, conn *zk.Conn, auth string) error {
	for {
		answered, err := Call(ctx, func() error { return conn.AddAuth("digest", []byte(auth)) })
		if !answered {
			return fmt.Errorf("zookeeper digest auth: %w", err)
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

// Dial opens a ZooKeeper session for tools and clients (the Coordinator
// opens its own with Connect and AddAuth). auth is "user:password" for ZooKeeper digest auth, or ""
// to read as the world. The session is established in the background; calls
// wait for it.
func Dial(servers []string, auth string, sessionTimeout time.Duration, log hclog.Logger) (*zk.Conn, error) {
	return DialTLS(servers, auth, tlsfiles.Files{}, sessionTimeout, log)
}

// DialTLS is Dial over TLS when files name any (see tlsfiles.Files).
func DialTLS(servers []string, auth string, files tlsfiles.Files, sessionTimeout time.Duration, log hclog.Logger) (*zk.Conn, error) {
	if _, _, err := ParseAuth(auth); err != nil {
		return nil, err
	}
	conn, err := Connect(servers, files, sessionTimeout, log, nil)
	if err != nil || auth == "" {
		return conn, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), sessionTimeout+5*time.Second)
	defer cancel()
	if err := AddAuth(ctx, conn, auth); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// ParseAuth splits "user:password".
func ParseAuth(auth string) (user, password string, err error) {
	if auth == "" {
		return "", "", nil
	}
	user, password, ok := strings.Cut(auth, ":")
	if !ok || user == "" {
		return "", "", fmt.Errorf("zookeeper auth %q: want user:password", Redact(auth))
	}
	return user, password, nil
}

// Redact is auth with its password hidden, for messages and logs.
func Redact(auth string) string {
	if u, _, ok := strings.Cut(auth, ":"); ok {
		return u + ":***"
	}
	return "***"
}

// zkLogger sends go-zookeeper's messages to hclog at debug level: the
// library logs every reconnect attempt, and the Coordinator logs what matters.
type zkLogger struct{ log hclog.Logger }

func (l zkLogger) Printf(format string, args ...interface{}) {
	l.log.Debug("zookeeper client", "msg", fmt.Sprintf(format, args...))
}
