package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"

	"github.com/hashicorp/go-hclog"
	oklog "github.com/oklog/run"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/snowfleet/snowfleet/worker"
)

// tlsOptions are the TLS flags, Redis's names: --tls-listen is tls-port's
// own listener beside --listen; --http-tls serves the admin port with the
// same files.
type tlsOptions struct {
	listen  string
	files   worker.TLSFiles
	httpTLS bool
	idsTLS  bool // --http-ids-tls
}

// enabled: some TLS was asked for.
func (t *tlsOptions) enabled() bool { return t.listen != "" || t.httpTLS || t.idsTLS }

// check is the flag-time check: the addresses and the files (loaded once,
// so a missing, unreadable or mismatched file is a flag error).
func (t *tlsOptions) check() error {
	if !t.enabled() {
		if t.files.CertFile != "" || t.files.KeyFile != "" || t.files.CACertFile != "" {
			return usagef("--tls-cert-file, --tls-key-file and --tls-ca-cert-file need --tls-listen or --http-tls (or --http-ids-tls)")
		}
		return nil
	}
	if t.listen != "" {
		if _, _, err := net.SplitHostPort(t.listen); err != nil {
			return usagef("--tls-listen %q: want host:port or :port (%v)", t.listen, err)
		}
	}
	if _, err := worker.NewCertReloader(t.files, nil, nil, "check"); err != nil {
		return usagef("--tls-cert-file %q, --tls-key-file %q, --tls-ca-cert-file %q, --tls-auth-clients %s: %v",
			t.files.CertFile, t.files.KeyFile, t.files.CACertFile, t.files.AuthClients, err)
	}
	return nil
}

// tlsSide is the TLS part of the daemon: the ID port's TLS listener and
// the admin server's TLS config.
type tlsSide struct {
	ln       net.Listener // nil without --tls-listen
	cfg      *tls.Config
	httpConf *tls.Config // nil without --http-tls
	idsConf  *tls.Config // nil without --http-ids-tls
}

func newTLSSide(t *tlsOptions, log hclog.Logger, reg prometheus.Registerer) (*tlsSide, error) {
	if !t.enabled() {
		return &tlsSide{}, nil
	}
	side := &tlsSide{}
	if t.listen != "" {
		r, err := worker.NewCertReloader(t.files, log.Named("tls"), reg, "id")
		if err != nil {
			return nil, err
		}
		side.cfg = r.Config()
		if side.ln, err = net.Listen("tcp", t.listen); err != nil {
			return nil, fmt.Errorf("listen --tls-listen %s: %w", t.listen, err)
		}
	}
	if t.httpTLS {
		r, err := worker.NewCertReloader(t.files, log.Named("http-tls"), reg, "http")
		if err != nil {
			if side.ln != nil {
				side.ln.Close()
			}
			return nil, err
		}
		side.httpConf = r.Config()
	}
	if t.idsTLS {
		r, err := worker.NewCertReloader(t.files, log.Named("http-ids-tls"), reg, "http-ids")
		if err != nil {
			if side.ln != nil {
				side.ln.Close()
			}
			return nil, err
		}
		side.idsConf = r.Config()
	}
	return side, nil
}

// addActor adds the TLS ID listener to the group: served by the same
// Server, so the plaintext actor's Shutdown drains it too.
func (side *tlsSide) addActor(g *oklog.Group, srv *worker.Server) {
	if side.ln == nil {
		return
	}
	g.Add(func() error { return srv.ServeTLS(side.ln, side.cfg) }, func(error) {
		_ = srv.Shutdown(context.Background())
	})
}

// serveHTTP serves the admin server, over TLS with --http-tls.
func (side *tlsSide) serveHTTP(srv *http.Server, ln net.Listener) error {
	var err error
	if side.httpConf != nil {
		srv.TLSConfig = side.httpConf
		err = srv.ServeTLS(ln, "", "")
	} else {
		err = srv.Serve(ln)
	}
	if !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("admin http: %w", err)
	}
	return nil
}
