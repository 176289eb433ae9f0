package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	oklog "github.com/oklog/run"
)

// signalActor is the run group's signal actor. On SIGINT or SIGTERM it turns
// /readyz to 503 at once and, for --shutdown-delay, goes on serving IDs, so
// that Kubernetes endpoints and balancers drop the worker before it stops
// accepting; then it returns, and the group drains and releases as before.
// A second signal during the delay cuts it short.
func (d *daemon) signalActor() (execute func() error, interrupt func(error)) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	execute = func() error {
		defer signal.Stop(sigs)
		var sig os.Signal
		select {
		case sig = <-sigs:
		case <-ctx.Done():
			return nil
		}
		d.srv.BeginShutdown()
		if d.shutdownDelay > 0 {
			d.log.Info("shutting down: not ready, still serving ids for the shutdown delay",
				"signal", sig.String(), "shutdown_delay", d.shutdownDelay)
			t := time.NewTimer(d.shutdownDelay)
			defer t.Stop()
			select {
			case <-t.C:
			case s := <-sigs:
				d.log.Info("second signal: cutting the shutdown delay short", "signal", s.String())
			case <-ctx.Done():
			}
		}
		d.log.Info("shutting down: draining connections, then releasing the lease", "signal", sig.String())
		return oklog.SignalError{Signal: sig}
	}
	return execute, func(error) { cancel() }
}
