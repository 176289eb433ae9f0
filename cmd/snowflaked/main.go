// Command snowflaked is a snowfleet worker: it leases one Snowflake slot from
// ZooKeeper and serves IDs for it over the Redis protocol, with an admin
// HTTP server beside it.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"time"

	"github.com/hashicorp/go-hclog"
	oklog "github.com/oklog/run"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/snowfleet/snowfleet/coordinator"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/worker"
)

// version is stamped at build time: go build -ldflags "-X main.version=v1.2.3".
var version = ""

func main() { os.Exit(run()) }

func run() int { return runArgs(os.Args[1:], os.Stdout, os.Stderr) }

// runArgs is the daemon: 0 after a signal and a clean release, 1 on a
// runtime failure, 2 on bad flags.
func runArgs(args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stdout)
	if errors.Is(err, errHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "snowflaked: %v\n", err)
		return 2
	}
	if o.showVersion {
		fmt.Fprintln(stdout, "snowflaked", buildVersion())
		return 0
	}
	log := hclog.New(&hclog.LoggerOptions{
		Name: "snowflaked", Level: hclog.LevelFromString(o.logLevel),
		JSONFormat: o.logFormat == "json", Output: stderr,
	})
	d, err := newDaemon(o, log)
	if err != nil {
		var ue *usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(stderr, "snowflaked: %v\n", err)
			return 2
		}
		log.Error("cannot start", "error", err)
		return 1
	}
	if err := d.run(); err != nil {
		log.Error("stopped", "error", err)
		return 1
	}
	log.Info("stopped")
	return 0
}

func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// daemon is the wired process: listeners, coordinator, server.
type daemon struct {
	log     hclog.Logger
	ln      net.Listener
	httpLn  net.Listener
	coord   *coordinator.Coordinator
	srv     *worker.Server
	httpSrv *http.Server
	drain   time.Duration
	// shutdownDelay: how long IDs are still served, not ready, after a signal.
	shutdownDelay time.Duration
	// pw re-reads --requirepass-file on SIGHUP (without one, SIGHUP is
	// logged and ignored).
	pw *passwords
	// tls is the TLS listener and configs (--tls-listen, --http-tls).
	tls *tlsSide
	// ids serves IDs over HTTP (--http-ids); nil without.
	ids *httpIDs
	// reg holds every metric the daemon exports (what /metrics serves).
	reg *prometheus.Registry
}

func newDaemon(o *options, log hclog.Logger) (_ *daemon, err error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	cc, wc := o.coord, o.worker
	cc.Version, wc.Version = buildVersion(), buildVersion()
	cc.Kind, cc.Program = zklayout.KindWorker, "snowflaked"
	// Made only for a valid configuration: the chaos build's clock logs
	// and watches a file.
	clock, err := newClock(log)
	if err != nil {
		return nil, usagef("clock: %v", err)
	}
	cc.Clock = clock

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), newBuildInfo())
	p, err := bindPorts(o, log, reg)
	if err != nil {
		return nil, err
	}
	// A later step that fails closes them too, so that a restart can bind
	// them.
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	// Published only once the ports are bound, so :0 advertises the real
	// port.
	if cc.Advertise == "" {
		cc.Advertise = advertised(p.idAddr())
	}
	cc.HTTPAdvertise = advertised(p.http.Addr())
	wc.Advertise = cc.Advertise
	if p.id != nil {
		wc.Listen = p.id.Addr().String()
	}
	coord, err := coordinator.New(cc, log.Named("coordinator"), reg)
	if err != nil {
		return nil, err
	}
	if err := coordinator.RegisterConfigMetrics(cc, reg); err != nil {
		return nil, err
	}
	srv, err := worker.New(wc, coord, log.Named("worker"), reg)
	if err != nil {
		return nil, err
	}
	log.Info("starting", "version", cc.Version, "listen", wc.Listen, "http", p.http.Addr().String(),
		"advertise", cc.Advertise, "zk", cc.Servers, "root", cc.Root, "datacenter", cc.Datacenter)
	d := &daemon{
		log: log, ln: p.id, httpLn: srv.AdminListener(p.http), coord: coord, srv: srv, drain: wc.DrainTimeout,
		shutdownDelay: o.shutdownDelay, tls: p.tls, ids: p.ids, reg: reg,
		httpSrv: srv.AdminServer(srv.Handler(reg)),
	}
	// Always there: SIGHUP's default action would kill the worker with no
	// drain and no release.
	d.pw = &passwords{path: o.requirepassFile, tokenPath: o.httpTokenFile, srv: srv, log: log}
	if o.requirepassFile != "" {
		srv.SetPasswords(o.passwords)
	}
	srv.SetHTTPTokens(o.httpTokens)
	return d, nil
}

// run is the one oklog/run group. Interrupts run in the order the actors
// were added: the ID server drains first (blocking, bounded), only then is
// the lease released, so no request is cut off and the successor starts
// at once.
func (d *daemon) run() error {
	var g oklog.Group
	if d.ln != nil {
		// ID server: stop accepting, answer what was received, close.
		g.Add(func() error { return d.srv.Serve(d.ln) }, func(error) {
			_ = d.srv.Shutdown(context.Background())
		})
	}
	// ID server over TLS (--tls-listen): drained with the plaintext one.
	d.tls.addActor(&g, d.srv)
	// IDs over HTTP (--http-ids): drained before the lease is released.
	d.ids.addActor(&g, d.srv, d.tls, d.drain)
	{
		// Lease: cancelled only after the server drained; Run then seals the
		// generator and releases the slot.
		leaseCtx, cancelLease := context.WithCancel(context.Background())
		g.Add(func() error { return d.coord.Run(leaseCtx) }, func(error) {
			select {
			case <-d.srv.Done():
			case <-time.After(d.drain + time.Second):
			}
			cancelLease()
		})
	}
	{
		// Admin HTTP: up until the lease is released, so /readyz shows 503
		// during the drain.
		g.Add(func() error { return d.tls.serveHTTP(d.httpSrv, d.httpLn) }, func(error) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_ = d.httpSrv.Shutdown(ctx)
		})
	}
	{
		// Passwords: re-read on SIGHUP, until the shutdown.
		ctx, cancel := context.WithCancel(context.Background())
		g.Add(func() error { return d.pw.reloadLoop(ctx) }, func(error) { cancel() })
	}
	{
		// Signals: SIGINT or SIGTERM turns /readyz to 503, waits out
		// --shutdown-delay still serving, then starts the shutdown.
		g.Add(d.signalActor())
	}
	err := g.Run()
	if errors.Is(err, oklog.ErrSignal) {
		return nil
	}
	return err
}
