package main

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/integration/zktest"
)

// connCosts bounds what one connection may cost the worker's RSS, kind by
// kind: what worker/README.md's "Limits and hostile input" documents,
// with room for the garbage collector's timing. A whole reply held per
// connection (about 90 KiB for 4,096 IDs, what a non-reader held before
// the output limit) passes every bound.
var connCosts = []struct {
	name  string
	bound int64 // bytes of RSS a connection
}{
	{"idle RESP, not authenticated (after a PING, -NOAUTH)", 16 << 10},
	{"idle IDs over HTTP, not authenticated", 32 << 10},
	{"IDs over HTTP, GET /ids?count=4096 never read", 40 << 10},
}

// TestConnectionCosts opens connCostConns connections of each kind against
// a worker with a password and IDs over HTTP, one kind after the other,
// and holds the RSS each costs to its bound (connCosts), logging the
// figure a connection (issue 38).
func TestConnectionCosts(t *testing.T) {
	const n = 2000
	raiseFDLimit(t, 3*n+256)
	bin := build(t)
	zks := zktest.Start(t)
	pw := filepath.Join(t.TempDir(), "requirepass")
	if err := os.WriteFile(pw, []byte("a-password-of-some-length\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ids := "127.0.0.1:" + freePort(t)
	d := startDaemon(t, bin, nil, "--zk", zks.Addr(), "--zk-root", "/conncost", "--requirepass-file", pw,
		"--http-ids", ids, "--http-ids-max-conns-per-addr", strconv.Itoa(2*n), "--read-timeout", "60s", "--log-level", "info")
	d.waitReady(15 * time.Second)
	pid := d.cmd.Process.Pid
	auth := "Authorization: Bearer a-password-of-some-length\r\n"
	kinds := []struct {
		addr  string
		greet string // sent once connected ("": nothing)
	}{
		{"127.0.0.1:" + d.port, "PING\r\n"},
		{ids, ""},
		{ids, "GET /ids?count=4096 HTTP/1.1\r\nHost: x\r\n" + auth + "\r\n"},
	}
	var open []net.Conn
	t.Cleanup(func() {
		for _, nc := range open {
			nc.Close()
		}
	})
	for i, k := range kinds {
		time.Sleep(time.Second) // what the last kind left settles
		before := rss(t, pid)
		for range n {
			nc, err := net.DialTimeout("tcp", k.addr, 5*time.Second)
			if err != nil {
				t.Fatalf("%s: %v", connCosts[i].name, err)
			}
			open = append(open, nc)
			if k.greet != "" {
				if _, err := nc.Write([]byte(k.greet)); err != nil {
					t.Fatalf("%s: %v", connCosts[i].name, err)
				}
			}
		}
		time.Sleep(2 * time.Second) // each served as far as it goes
		per := (rss(t, pid) - before) / n
		t.Logf("%s: %d connections, %.1f KiB of RSS each", connCosts[i].name, n, float64(per)/1024)
		if per > connCosts[i].bound {
			t.Errorf("%s: %d KiB of RSS a connection, bound %d KiB", connCosts[i].name, per>>10, connCosts[i].bound>>10)
		}
	}
	if code, body := d.get("/readyz"); code != 200 || !strings.HasPrefix(body, "ready") {
		t.Errorf("/readyz = %d %q with the connections open", code, body)
	}
}
