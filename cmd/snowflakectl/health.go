package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// runHealth is a container health check: the worker image is FROM scratch,
// with no shell or curl, so its HEALTHCHECK runs `snowflakectl health`.
func runHealth(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("health", "[--http host:port] [--path /readyz] [--timeout 2s]",
		"Exits 0 when the worker's admin HTTP path answers 200 (by default /readyz: the\n"+
			"worker holds a lease and may serve), 1 otherwise, printing the answer.")
	addr := fs.String("http", "127.0.0.1:7610", "the worker's admin HTTP address")
	path := fs.String("path", "/readyz", "the path to ask (/healthz: the process is up; /readyz: it serves)")
	timeout := fs.Duration("timeout", 2*time.Second, "how long to wait for the answer")
	quiet := fs.Bool("q", false, "print nothing when healthy")
	if rc := parse(fs, args, stdout, stderr); rc >= 0 {
		return rc
	}
	if fs.NArg() > 0 {
		return usageError(stderr, "health", "unexpected argument %q (the address goes in --http)", fs.Arg(0))
	}
	if *timeout <= 0 {
		return usageError(stderr, "health", "--timeout must be positive, got %s", *timeout)
	}
	if !strings.HasPrefix(*path, "/") {
		return usageError(stderr, "health", "--path must start with /, got %q", *path)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	url := "http://" + *addr + *path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return usageError(stderr, "health", "bad address %q: %v", *addr, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "snowflakectl health: %s: %v\n", url, err)
		return exitFailure
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	msg := strings.TrimSpace(string(body))
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "snowflakectl health: %s: %s %s\n", url, resp.Status, msg)
		return exitFailure
	}
	if !*quiet {
		fmt.Fprintf(stdout, "%s: %s %s\n", url, resp.Status, msg)
	}
	return exitOK
}
