package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	oklog "github.com/oklog/run"

	"github.com/snowfleet/snowfleet/worker"
)

// checkHTTPIDs is the flag-time check of --http-ids: an address, and never
// the admin port, whose probes and metrics must not share a listener (its
// limits, its token) with traffic; over TLS when the ID port is TLS only
// (--listen ""), so that plaintext HTTP is no way around its mutual TLS.
func (o *options) checkHTTPIDs() error {
	if o.httpIDs == "" {
		if o.tls.idsTLS {
			return usagef("--http-ids-tls needs --http-ids")
		}
		return nil
	}
	if o.worker.Listen == "" && o.tls.listen != "" && !o.tls.idsTLS {
		return usagef(`--http-ids %s would serve IDs in plaintext while the ID port is TLS only (--listen "" with --tls-listen): add --http-ids-tls, whose connections follow --tls-auth-clients (%s)`,
			o.httpIDs, o.tls.files.AuthClients)
	}
	_, port, err := net.SplitHostPort(o.httpIDs)
	if err != nil {
		return usagef("--http-ids %q: want host:port or :port (%v)", o.httpIDs, err)
	}
	if _, adminPort, err := net.SplitHostPort(o.http); err == nil && port == adminPort && port != "0" {
		return usagef("--http-ids %s is on the admin port (--http %s): IDs are served on a listener of their own", o.httpIDs, o.http)
	}
	return nil
}

// httpIDs is the IDs-over-HTTP side of the daemon: nil without --http-ids.
type httpIDs struct {
	ln  net.Listener
	srv *http.Server
	tls bool
}

func listenHTTPIDs(o *options, side *tlsSide) (*httpIDs, error) {
	if o.httpIDs == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", o.httpIDs)
	if err != nil {
		return nil, fmt.Errorf("listen --http-ids %s: %w", o.httpIDs, err)
	}
	return &httpIDs{ln: ln, tls: side.idsConf != nil}, nil
}

// addActor serves IDs over HTTP until the shutdown, drained as the RESP
// port is (within drain), before the lease is released.
func (h *httpIDs) addActor(g *oklog.Group, srv *worker.Server, side *tlsSide, drain time.Duration) {
	if h == nil {
		return
	}
	h.srv = srv.IDsServer()
	ln := srv.IDsListener(h.ln)
	g.Add(func() error {
		var err error
		if h.tls {
			h.srv.TLSConfig = side.idsConf
			err = h.srv.ServeTLS(ln, "", "")
		} else {
			err = h.srv.Serve(ln)
		}
		if !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("http ids: %w", err)
		}
		return nil
	}, func(error) {
		ctx, cancel := context.WithTimeout(context.Background(), drain)
		defer cancel()
		_ = h.srv.Shutdown(ctx)
	})
}
