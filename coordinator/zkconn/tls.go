package zkconn

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/hashicorp/go-hclog"
	"github.com/snowfleet/snowfleet/snowflake/configerr"
	"github.com/snowfleet/snowfleet/snowflake/tlsfiles"
)

// ErrTLSFiles: a ZooKeeper TLS certificate, key or CA file is missing,
// unreadable, not PEM, or the certificate does not match the key.
var ErrTLSFiles = errors.New("bad ZooKeeper TLS files")

// ValidateTLS loads files as a connection would. An error is a
// *configerr.Error naming the field as prefix+"CertFile" (KeyFile,
// CACertFile) and wrapping ErrTLSFiles; zklayout.ZKConfig's prefix is
// "TLS.".
func ValidateTLS(files tlsfiles.Files, prefix string) error {
	_, err := loadTLS(files, prefix)
	return err
}

// loadTLS reads files into a client config (the server name is set per
// dial, from the address dialed); errors as ValidateTLS's.
func loadTLS(files tlsfiles.Files, prefix string) (*tls.Config, error) {
	cert, pool, err := files.Load()
	var ce *configerr.Error
	if errors.As(err, &ce) {
		named := *ce
		named.Field = prefix + ce.Field
		named.Err = ErrTLSFiles
		if ce.Err != nil {
			named.Err = fmt.Errorf("%w: %w", ErrTLSFiles, ce.Err)
		}
		return nil, &named
	}
	if err != nil {
		return nil, err
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	return cfg, nil
}

// zkDialer dials ZooKeeper over TLS. The files are looked at on every dial
// (a session's first connection and each reconnect): a rotated
// certificate is presented from the next connection on, with no restart,
// and an established connection keeps the one it was made with, as the
// server checks a certificate only at the handshake. Files that change but
// do not load (half-written, mismatched) are logged, and the ones in force
// stay.
type zkDialer struct {
	files tlsfiles.Files
	log   hclog.Logger
	// handshakeTimeout is the session timeout: see dial.
	handshakeTimeout time.Duration

	mu      sync.Mutex
	stamp   string
	cfg     *tls.Config
	lastErr string // the last handshake failure logged at warn
}

// failed logs a handshake failure: at warn when it differs from the last
// one (a certificate the server refuses, a server name the certificate
// lacks: what an operator must see), else at debug, as go-zookeeper
// retries every server about once a second.
func (d *zkDialer) failed(address string, err error) {
	d.mu.Lock()
	again := d.lastErr == err.Error()
	d.lastErr = err.Error()
	d.mu.Unlock()
	if again {
		d.log.Debug("zookeeper tls handshake failed", "server", address, "error", err)
		return
	}
	d.log.Warn("zookeeper tls handshake failed", "server", address, "error", err)
}

func newZKDialer(files tlsfiles.Files, sessionTimeout time.Duration, log hclog.Logger) (*zkDialer, error) {
	stamp := files.Stamp()
	cfg, err := loadTLS(files, "TLS.")
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return &zkDialer{files: files, log: log, handshakeTimeout: sessionTimeout, stamp: stamp, cfg: cfg}, nil
}

// config is the config in force, reloaded first if the files changed.
func (d *zkDialer) config() *tls.Config {
	d.mu.Lock()
	defer d.mu.Unlock()
	if stamp := d.files.Stamp(); stamp != d.stamp {
		d.stamp = stamp // not again until they change again
		if cfg, err := loadTLS(d.files, "TLS."); err != nil {
			d.log.Error("ZooKeeper TLS files changed but do not load; the ones in force stay", "error", err)
		} else {
			d.cfg = cfg
			d.log.Info("ZooKeeper TLS files reloaded", "cert", d.files.CertFile, "ca", d.files.CACertFile)
		}
	}
	return d.cfg
}

// dial is a zk.Dialer: TCP within timeout, then the handshake within the
// session timeout. go-zookeeper gives a dialer 1 s, enough for a TCP
// connect, but a JVM's first handshakes (its crypto not yet compiled) took
// up to 5 s on a busy machine here, and a failed dial to the only server
// fails the calls queued on the session; a server slower than the session
// timeout could not keep the session anyway. The server's certificate must
// name the host dialed.
func (d *zkDialer) dial(network, address string, timeout time.Duration) (net.Conn, error) {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	cfg := d.config().Clone()
	cfg.ServerName = host
	raw, err := net.DialTimeout(network, address, timeout)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), max(timeout, d.handshakeTimeout))
	defer cancel()
	c := tls.Client(raw, cfg)
	if err := c.HandshakeContext(ctx); err != nil {
		raw.Close()
		d.failed(address, err)
		return nil, fmt.Errorf("tls handshake with zookeeper %s: %w", address, err)
	}
	return c, nil
}

// dialOption is go-zookeeper's dialer option for files; nil without TLS.
func dialOption(files tlsfiles.Files, sessionTimeout time.Duration, log hclog.Logger) (func(*zk.Conn), error) {
	if !files.Enabled() {
		return nil, nil
	}
	d, err := newZKDialer(files, sessionTimeout, log)
	if err != nil {
		return nil, err
	}
	dialer, hosts := zk.WithDialer(d.dial), zk.WithHostProvider(&namedHosts{})
	return func(c *zk.Conn) { dialer(c); hosts(c) }, nil
}

// namedHosts is a zk.HostProvider that hands out the servers as given,
// names unresolved: go-zookeeper's default one resolves them to IPs at the
// start, and the dialer would then check the server's certificate against
// an IP instead of the name it was made for. Each dial resolves the name
// afresh (a server that moved is found). Like the default, it starts at a
// random server so that workers spread over the ensemble.
type namedHosts struct {
	mu      sync.Mutex
	servers []string
	curr    int // the server last handed out
	last    int // the server last connected to; -1 before any
}

func (h *namedHosts) Init(servers []string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(servers) == 0 {
		return errors.New("no servers")
	}
	h.servers = slices.Clone(servers)
	rand.Shuffle(len(h.servers), func(i, j int) { h.servers[i], h.servers[j] = h.servers[j], h.servers[i] })
	h.curr, h.last = -1, -1
	return nil
}

func (h *namedHosts) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.servers)
}

// Next is the next server; retryStart once every server was tried since
// the last connection.
func (h *namedHosts) Next() (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.curr = (h.curr + 1) % len(h.servers)
	retryStart := h.curr == h.last
	if h.last == -1 {
		h.last = 0
	}
	return h.servers[h.curr], retryStart
}

func (h *namedHosts) Connected() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last = h.curr
}
