package worker

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// 1,000 idle admin connections from one address (127.0.0.2) leave the
// probes from another (127.0.0.1) answered: one address holds at most
// HTTPMaxConnsPerAddr. With the global cap alone, /healthz failed for as
// long as the idle connections were held.
func TestAdminProbesBesideIdleFlood(t *testing.T) {
	w := startFake(t, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := w.srv.AdminServer(w.srv.Handler(w.reg))
	go func() { _ = hs.Serve(w.srv.AdminListener(ln)) }()
	t.Cleanup(func() { hs.Close() })
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}, Timeout: time.Second}
	var idle []net.Conn
	t.Cleanup(func() {
		for _, c := range idle {
			c.Close()
		}
	})
	for range 1000 {
		c, err := d.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatalf("idle connection %d: %v", len(idle), err)
		}
		idle = append(idle, c)
	}
	time.Sleep(200 * time.Millisecond) // the listener has taken what it takes
	probe := http.Client{Timeout: time.Second}
	for i := range 5 {
		resp, err := probe.Get("http://" + ln.Addr().String() + "/healthz")
		if err != nil {
			t.Fatalf("probe %d beside 1,000 idle connections from another address: %v", i, err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("probe %d: %d", i, resp.StatusCode)
		}
	}
}

// 4 addresses x 4 keep-alive connections fill HTTPMaxConns (16) with none
// past HTTPMaxConnsPerAddr (4); the probes from a fifth address are still
// answered, from the reserve, and the connection closed after each; the
// reserve answers nothing else (503). Before, /healthz hung until one of
// the 16 closed: 8 x 32 filled the default 256, and liveness restarted the
// pod.
func TestAdminProbesBesideManyAddresses(t *testing.T) {
	w := startFake(t, func(c *Config) { c.HTTPMaxConns, c.HTTPMaxConnsPerAddr = 16, 4 })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := w.srv.AdminServer(w.srv.Handler(w.reg))
	go func() { _ = hs.Serve(w.srv.AdminListener(ln)) }()
	t.Cleanup(func() { hs.Close() })
	for a := 2; a <= 5; a++ {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(a))}, Timeout: time.Second}
		for range 4 {
			c, err := d.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			_ = c.SetDeadline(time.Now().Add(2 * time.Second))
			if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("keep-alive connection from 127.0.0.%d: %v, %v", a, resp, err)
			}
			resp.Body.Close() // and kept open, idle
		}
	}
	probe := http.Client{Timeout: time.Second}
	get := func(path string) (int, string, bool) {
		t.Helper()
		resp, err := probe.Get("http://" + ln.Addr().String() + path)
		if err != nil {
			t.Fatalf("GET %s with 16 of 16 admin connections open, from 4 addresses: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Close
	}
	for range 3 {
		for _, p := range []string{"/healthz", "/readyz"} {
			if code, body, closed := get(p); code != 200 || !closed {
				t.Fatalf("probe %s: %d %q, close %v; want 200 and the reserve's connection closed", p, code, body, closed)
			}
		}
	}
	if code, body, _ := get("/status"); code != http.StatusServiceUnavailable || !strings.Contains(body, "/healthz and /readyz only") {
		t.Errorf("/status from the reserve: %d %q; want 503 saying the reserve serves the probes only", code, body)
	}
	var m dto.Metric
	if err := w.srv.m.adminReserved.Write(&m); err != nil || m.GetCounter().GetValue() != 7 {
		t.Errorf("snowflake_worker_admin_connections_reserved_total = %v (%v), want 7", m.GetCounter().GetValue(), err)
	}
}
