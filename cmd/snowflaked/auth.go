package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/hashicorp/go-hclog"

	"github.com/snowfleet/snowfleet/snowflake/secretfile"
	"github.com/snowfleet/snowfleet/worker"
)

// passwords reads --requirepass-file at start (a bad file is a flag
// error: exit 2) and again on every SIGHUP, when a bad file is logged and
// the passwords in force are kept: a typo during a rotation must not open
// the service nor lock every client out. A good file closes the
// connections authenticated with a password no longer in it.
type passwords struct {
	path string
	// tokenPath is --http-token-file, re-read on the same SIGHUP.
	tokenPath string
	srv       *worker.Server
	log       hclog.Logger
}

// reloadLoop re-reads the file on SIGHUP until ctx ends; without a file it
// logs the signal and ignores it (SIGHUP's default would kill the worker
// without a drain or a release).
func (p *passwords) reloadLoop(ctx context.Context) error {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-hup:
		}
		if p.tokenPath != "" {
			if toks, err := secretfile.ReadPasswords(p.tokenPath); err != nil {
				p.log.Error("SIGHUP: cannot re-read --http-token-file; the tokens in force stay", "error", err)
			} else {
				p.srv.SetHTTPTokens(toks)
				p.log.Info("SIGHUP: admin tokens re-read", "file", p.tokenPath, "tokens", len(toks))
			}
		}
		if p.path == "" {
			if p.tokenPath == "" {
				p.log.Info("SIGHUP: nothing to re-read (no --requirepass-file or --http-token-file); ignored")
			}
			continue
		}
		pws, err := secretfile.ReadPasswords(p.path)
		if err != nil {
			p.log.Error("SIGHUP: cannot re-read --requirepass-file; the passwords in force stay", "error", err)
			continue
		}
		closed := p.srv.SetPasswords(pws)
		p.log.Info("SIGHUP: passwords re-read", "file", p.path, "passwords", len(pws),
			"closed_connections", closed)
	}
}
