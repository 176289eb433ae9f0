package worker

import (
	"net"
	"net/http"
	"testing"
	"time"
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
