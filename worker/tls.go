package worker

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/snowfleet/snowfleet/snowflake/tlsfiles"
)

// TLS on the ID port works as Redis's tls-port: a listener of its own
// (--tls-listen) beside the plaintext one, with Redis's flag names. A TLS
// connection is served by a goroutine (the epoll loop speaks plain TCP);
// its handshake is bounded by ReadTimeout, so a client that connects and
// sends nothing, or half a handshake, or plaintext, costs only its own
// connection.

// ErrTLSFiles: a certificate, key or CA file is missing, unreadable, not
// PEM, or the certificate does not match the key.
var ErrTLSFiles = errors.New("bad TLS files")

// TLSFiles names the PEM files of a TLS listener and how it asks for
// client certificates, as Redis's tls-* options.
type TLSFiles struct {
	// Files are the server's certificate (chain) and key (CertFile,
	// KeyFile: both required) and the CA certificates client certificates
	// are checked against (CACertFile: required unless AuthClients is
	// "no").
	tlsfiles.Files
	// AuthClients is Redis's tls-auth-clients: "no" (no client
	// certificate asked), "optional" (one is checked if sent), "yes"
	// (mutual TLS: one is required).
	AuthClients string
}

// Validate names the first field that is wrong.
func (f TLSFiles) Validate() error {
	switch {
	case f.CertFile == "" || f.KeyFile == "":
		return fmt.Errorf("%w: the certificate and key files are both required", ErrTLSFiles)
	case f.AuthClients != "no" && f.AuthClients != "optional" && f.AuthClients != "yes":
		return fmt.Errorf("%w: auth-clients %q: want no, optional or yes", ErrTLSFiles, f.AuthClients)
	case f.AuthClients != "no" && f.CACertFile == "":
		return fmt.Errorf("%w: auth-clients %s needs a CA file to check client certificates against", ErrTLSFiles, f.AuthClients)
	}
	return nil
}

// tls12Suites are the suites a TLS 1.2 client may get: AEAD ciphers
// with an ephemeral key exchange (forward secrecy) only, as Mozilla's
// "intermediate" profile. Go's defaults also take ECDHE with AES-CBC and
// SHA-1, which are open to padding-oracle attacks (Lucky13) and carry no
// AEAD. TLS 1.3 suites are not configurable and are all AEAD.
func tls12Suites() []uint16 {
	return []uint16{
		tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
		tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
		tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
		tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
		tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
		tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
	}
}

// tlsReloadEvery is how often a handshake may look at the files' mtimes:
// a rotated certificate (a Kubernetes secret) is in force within it.
const tlsReloadEvery = time.Second

// CertReloader serves the certificate and CA of TLSFiles and reloads them
// when a file changes (mtime or size), looked at, at most once per
// tlsReloadEvery, by the handshakes themselves: no goroutine, no restart.
// Files that do not load then (half-written, mismatched) are logged and
// counted, and the ones in force stay.
type CertReloader struct {
	files TLSFiles
	log   hclog.Logger
	base  *tls.Config

	mu      sync.Mutex
	stamp   string // mtimes and sizes of the files loaded
	checked time.Time
	cfg     *tls.Config // the config in force for new handshakes

	reloads *prometheus.CounterVec
}

// NewCertReloader loads files (an error names what was wrong) and returns
// the reloader; reg may be nil. Config is the *tls.Config for a listener.
func NewCertReloader(files TLSFiles, log hclog.Logger, reg prometheus.Registerer, name string) (*CertReloader, error) {
	if err := files.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = hclog.NewNullLogger()
	}
	r := &CertReloader{files: files, log: log,
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "snowflake_worker_tls_reloads_total",
			Help:        "Reloads of the TLS certificate files after a change, by result (ok, error: the files in force stay).",
			ConstLabels: prometheus.Labels{"listener": name},
		}, []string{"result"}),
	}
	cfg, stamp, err := files.load()
	if err != nil {
		return nil, err
	}
	r.cfg, r.stamp, r.checked = cfg, stamp, time.Now()
	if reg != nil {
		if err := reg.Register(r.reloads); err != nil {
			return nil, fmt.Errorf("register tls metrics: %w", err)
		}
	}
	r.base = &tls.Config{MinVersion: tls.VersionTLS12, CipherSuites: tls12Suites(), GetConfigForClient: r.forClient}
	return r, nil
}

// Config is the listener's TLS configuration.
func (r *CertReloader) Config() *tls.Config { return r.base }

func (r *CertReloader) forClient(*tls.ClientHelloInfo) (*tls.Config, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now := time.Now(); now.Sub(r.checked) >= tlsReloadEvery {
		r.checked = now
		if stamp := r.files.Stamp(); stamp != r.stamp {
			cfg, loaded, err := r.files.load()
			if err != nil {
				r.reloads.WithLabelValues("error").Inc()
				r.log.Error("TLS files changed but do not load; the ones in force stay", "error", err)
				r.stamp = stamp // not again until they change again
			} else {
				r.cfg, r.stamp = cfg, loaded
				r.reloads.WithLabelValues("ok").Inc()
				r.log.Info("TLS files reloaded", "cert", r.files.CertFile)
			}
		}
	}
	return r.cfg, nil
}

// load reads the files into a server config; stamp is taken before the
// reads, so a change during them is seen at the next look.
func (f TLSFiles) load() (*tls.Config, string, error) {
	stamp := f.Stamp()
	cert, pool, err := f.Load()
	if err != nil {
		return nil, "", fmt.Errorf("%w: %w", ErrTLSFiles, err)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, CipherSuites: tls12Suites(), Certificates: []tls.Certificate{*cert}, ClientCAs: pool}
	switch f.AuthClients {
	case "yes":
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	case "optional":
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	}
	return cfg, stamp, nil
}

// ServeTLS serves TLS connections on ln with cfg, beside Serve's
// plaintext listener; Shutdown stops both. Call it on its own goroutine
// (an oklog/run actor of its own).
func (s *Server) ServeTLS(ln net.Listener, cfg *tls.Config) error {
	if err := tuneListener(ln, s.cfg.ClientOutputLimit); err != nil {
		s.log.Warn("cannot set the socket buffers of connections; the system's defaults stay", "error", err)
	}
	return s.Serve(tls.NewListener(ln, cfg))
}

// handshake does a TLS connection's handshake within ReadTimeout; false:
// it failed (counted) and the connection must close.
func (s *Server) handshake(nc net.Conn) bool {
	tc, ok := nc.(*tls.Conn)
	if !ok {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ReadTimeout)
	defer cancel()
	_ = tc.SetDeadline(time.Now().Add(s.cfg.ReadTimeout))
	if err := tc.HandshakeContext(ctx); err != nil {
		s.tlsFailures.Inc()
		s.log.Debug("tls handshake failed", "remote", nc.RemoteAddr().String(), "error", err)
		return false
	}
	_ = tc.SetDeadline(time.Time{})
	return true
}

func newTLSFailures(reg prometheus.Registerer) (prometheus.Counter, error) {
	c := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "snowflake_worker_tls_handshake_failures_total",
		Help: "TLS connections closed because their handshake failed or did not finish within --read-timeout (plaintext on the TLS port, a bad or missing client certificate, a stalled client).",
	})
	if reg != nil {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register tls metrics: %w", err)
		}
	}
	return c, nil
}
