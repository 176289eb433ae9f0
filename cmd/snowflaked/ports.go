package main

import (
	"fmt"
	"net"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
)

// ports are the daemon's bound listeners. Bound before the coordinator is
// made, so that :0 advertises the port the kernel chose.
type ports struct {
	id   net.Listener // the plaintext ID port; nil with --listen ""
	http net.Listener // the admin port
	tls  *tlsSide     // the TLS ID listener (tls.ln, nil without --tls-listen) and the TLS configs
	ids  *httpIDs     // IDs over HTTP; nil without --http-ids
}

// bindPorts binds every port o names. When one fails, those bound before
// it are closed again, so that a supervisor's restart can bind them.
func bindPorts(o *options, log hclog.Logger, reg prometheus.Registerer) (p ports, err error) {
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	// --listen "" turns the plaintext ID port off (validate: only with
	// --tls-listen), so mutual TLS cannot be bypassed on it.
	if l := o.worker.Listen; l != "" {
		if p.id, err = net.Listen("tcp", l); err != nil {
			return p, fmt.Errorf("listen --listen %s: %w", l, err)
		}
	}
	if p.http, err = net.Listen("tcp", o.http); err != nil {
		return p, fmt.Errorf("listen --http %s: %w", o.http, err)
	}
	if p.tls, err = newTLSSide(&o.tls, log, reg); err != nil {
		return p, err
	}
	p.ids, err = listenHTTPIDs(o, p.tls)
	return p, err
}

// idAddr is the ID port to advertise: the plaintext one, or the TLS one
// when it is the only one.
func (p ports) idAddr() net.Addr {
	if p.id != nil {
		return p.id.Addr()
	}
	return p.tls.ln.Addr()
}

// close closes every listener bound.
func (p ports) close() {
	for _, ln := range []net.Listener{p.id, p.http} {
		if ln != nil {
			ln.Close()
		}
	}
	if p.tls != nil && p.tls.ln != nil {
		p.tls.ln.Close()
	}
	if p.ids != nil {
		p.ids.ln.Close()
	}
}
