package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"
)

// healthCommand is a container health check: the worker image is FROM
// scratch, with no shell or curl, so its HEALTHCHECK runs `snowflakectl
// health`.
func (c *ctl) healthCommand() *ffcli.Command {
	fs := newFlagSet("health")
	addr := fs.String("http", "127.0.0.1:7610", "the worker's admin HTTP address")
	path := fs.String("path", "/readyz", "the path to ask (/healthz: the process is up; /readyz: it serves)")
	timeout := fs.Duration("timeout", 2*time.Second, "how long to wait for the answer")
	quiet := fs.Bool("q", false, "print nothing when healthy")
	return c.command(fs, "[--http host:port] [--path /readyz] [--timeout 2s]",
		"exit 0 when a worker's /readyz answers 200 (container health checks)",
		"Exits 0 when the worker's admin HTTP path answers 200 (by default /readyz: the\n"+
			"worker holds a lease and may serve), 1 otherwise, printing the answer.",
		func(ctx context.Context, args []string) error {
			if len(args) > 0 {
				return usagef("unexpected argument %q (the address goes in --http)", args[0])
			}
			if *timeout <= 0 {
				return usagef("--timeout must be positive, got %s", *timeout)
			}
			if !strings.HasPrefix(*path, "/") {
				return usagef("--path must start with /, got %q", *path)
			}
			ctx, cancel := context.WithTimeout(ctx, *timeout)
			defer cancel()
			url := "http://" + *addr + *path
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return usagef("bad address %q: %v", *addr, err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return fmt.Errorf("%s: %w", url, err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			msg := strings.TrimSpace(string(body))
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("%s: %s %s", url, resp.Status, msg)
			}
			if !*quiet {
				fmt.Fprintf(c.stdout, "%s: %s %s\n", url, resp.Status, msg)
			}
			return nil
		})
}
