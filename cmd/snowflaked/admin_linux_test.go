package main

import (
	"bufio"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/integration/faultproxy"
	"github.com/snowfleet/snowfleet/integration/zktest"
)

// TestAdminIdleConnections: 5,000 admin connections that each make one
// request and then keep the connection, against a worker limited to 4,096
// file descriptors, leave the ID port serving and ZooKeeper connected: the
// worker reconnects to it (the proxy resets its connection) and renews its
// lease through the new connection. --http-max-conns caps what the admin
// port takes; before it, the idle connections took every descriptor, and
// then the ID port's accepts and ZooKeeper's reconnect failed (issue 19
// item 4).
func TestAdminIdleConnections(t *testing.T) {
	const idle, fileLimit = 5000, 4096
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur < 2*idle {
		lim.Cur = min(lim.Max, 4*idle)
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur < 2*idle {
			t.Fatalf("the test needs %d file descriptors; RLIMIT_NOFILE %+v: %v", 2*idle, lim, err)
		}
	}
	bin := build(t)
	limited := filepath.Join(t.TempDir(), "snowflaked-limited")
	script := "#!/bin/sh\nulimit -n " + strconv.Itoa(fileLimit) + " || exit 3\nexec " + bin + " \"$@\"\n"
	if err := os.WriteFile(limited, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	zks := zktest.Start(t)
	proxy := faultproxy.New(t, zks.Addr())
	d := startDaemon(t, limited, nil, "--zk", proxy.Addr(), "--zk-root", "/admin-idle",
		"--session-timeout", "20s", "--renew", "300ms", "--horizon", "10s")
	d.waitReady(15 * time.Second)
	sessionBefore := d.info()["session_id"]

	var mu sync.Mutex
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	var wg sync.WaitGroup
	for g := 0; g < 100; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < idle/100; i++ {
				c, err := net.DialTimeout("tcp", "127.0.0.1:"+d.http, 500*time.Millisecond)
				if err != nil {
					continue // the kernel's backlog is full: SYNs are dropped
				}
				_, _ = c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"))
				mu.Lock()
				conns = append(conns, c)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	t.Logf("%d admin connections open, each with one request sent", len(conns))
	time.Sleep(time.Second)

	proxy.Reset() // ZooKeeper's connection drops: the worker must dial again
	time.Sleep(2 * time.Second)
	info := d.info()
	if info["ready"] != "1" || info["state"] != "serving" || info["session_id"] != sessionBefore {
		t.Fatalf("after the reset, with %d admin connections: INFO %v; want ready, serving, session %s", len(conns), info, sessionBefore)
	}
	ceiling := info["ceiling_ms"]
	time.Sleep(time.Second)
	if info = d.info(); info["ceiling_ms"] == ceiling {
		t.Fatalf("ceiling_ms stuck at %s: the lease is not renewed through ZooKeeper", ceiling)
	}
	if id := d.resp("NEXTID"); !strings.HasPrefix(id, ":") {
		t.Fatalf("NEXTID = %q", id)
	}

	for _, c := range conns {
		c.Close()
	}
	conns = nil
	deadline := time.Now().Add(10 * time.Second)
	for {
		if code, _ := d.get("/healthz"); code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("/healthz not answering 10s after the idle connections closed")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// resp sends one inline command on a new connection to the ID port and
// returns its first reply line; "" (and the test fails) if none came
// within 5s.
func (d *daemonProc) resp(cmd string) string {
	d.t.Helper()
	lines := d.respLines(cmd, func(string) bool { return true })
	if len(lines) == 0 {
		return ""
	}
	return lines[0]
}

// respLines is resp's lines up to the one last says ends the reply.
func (d *daemonProc) respLines(cmd string, last func(string) bool) []string {
	d.t.Helper()
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+d.port, 5*time.Second)
	if err != nil {
		d.t.Fatalf("dial the ID port: %v", err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte(cmd + "\r\n")); err != nil {
		d.t.Fatalf("%s: %v", cmd, err)
	}
	br := bufio.NewReader(c)
	var lines []string
	for len(lines) == 0 || !last(lines[len(lines)-1]) {
		l, err := br.ReadString('\n')
		if err != nil {
			if len(lines) == 0 {
				d.t.Errorf("%s: no reply from the ID port: %v", cmd, err)
			}
			break
		}
		lines = append(lines, strings.TrimRight(l, "\r\n"))
	}
	return lines
}

// info is INFO's key:value lines, read through the ID port.
func (d *daemonProc) info() map[string]string {
	d.t.Helper()
	m := map[string]string{}
	for _, l := range d.respLines("INFO", func(l string) bool { return strings.HasPrefix(l, "draining:") }) {
		if k, v, ok := strings.Cut(l, ":"); ok {
			m[k] = v
		}
	}
	if len(m) == 0 {
		d.t.Fatal("INFO: nothing")
	}
	return m
}
