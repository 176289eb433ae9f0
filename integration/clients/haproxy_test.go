//go:build linux

package clients

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/integration/fleettest"
	"github.com/snowfleet/snowfleet/integration/zktest"
)

// startHAProxy runs HAProxy in TCP mode in front of the workers, as a
// Kubernetes Service or IPVS would stand: it health-checks /readyz on each
// admin port, and — unlike `on-marked-down shutdown-sessions`, which this
// config deliberately leaves out — it never closes a client's connection
// to a worker that went unready. Moving off such a worker is the worker's
// job. It returns the frontend's address.
func startHAProxy(t *testing.T, ws []*fleettest.Worker) string {
	t.Helper()
	addrs := make([]string, len(ws))
	for i, w := range ws {
		addrs[i] = w.Addr
	}
	return runHAProxy(t, `	mode tcp
	timeout connect 1s
	timeout client 60s
	timeout server 60s
	retries 3
	option redispatch
`, ws, addrs)
}

// runHAProxy runs HAProxy with the given defaults before addrs (one per
// worker), each health-checked on its worker's /readyz, and returns the
// frontend's address.
func runHAProxy(t *testing.T, defaults string, ws []*fleettest.Worker, addrs []string) string {
	t.Helper()
	front := zktest.FreeAddr(t)
	var b strings.Builder
	fmt.Fprintf(&b, `global
	maxconn 2000
defaults
%sfrontend ids
	bind %s
	default_backend workers
backend workers
	balance roundrobin
	option httpchk GET /readyz
	http-check expect status 200
	default-server inter 100ms fastinter 100ms downinter 200ms fall 1 rise 2
`, defaults, front)
	for i, w := range ws {
		_, port, _ := net.SplitHostPort(w.HTTP)
		fmt.Fprintf(&b, "\tserver w%d %s check port %s\n", i, addrs[i], port)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "haproxy.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("haproxy", "-db", "-f", cfg)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start haproxy: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); logf.Close() })
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", front, time.Second)
		if err == nil {
			c.Close()
			return front
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(logf.Name())
			t.Fatalf("haproxy did not listen on %s: %v\n%s", front, err, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
