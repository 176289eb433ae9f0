package worker

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// The ID port's guards on IDs over HTTP (issue 38 item 3), each against a
// worker.Server on a fake lease, with net/http's client code on real
// sockets.

// serveIDsOn serves w's IDs over HTTP on a port of ip and returns its
// host:port.
func serveIDsOn(t *testing.T, w *testWorker, ip string) string {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	hs := w.srv.IDsServer()
	go func() { _ = hs.Serve(w.srv.IDsListener(ln)) }()
	t.Cleanup(func() { hs.Close() })
	return ln.Addr().String()
}

// httpConn is one client connection on which requests go one by one, so
// that a test sees what the server does to the connection.
type httpConn struct {
	t  *testing.T
	nc net.Conn
	br *bufio.Reader
}

func dialHTTP(t *testing.T, addr string) *httpConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &httpConn{t: t, nc: nc, br: bufio.NewReader(nc)}
}

// get sends GET path with the bearer password pw (none: "") and returns
// the answer, its body read.
func (c *httpConn) get(path, pw string) (*http.Response, string) {
	c.t.Helper()
	req, _ := http.NewRequest("GET", "http://"+c.nc.RemoteAddr().String()+path, nil)
	if pw != "" {
		req.Header.Set("Authorization", "Bearer "+pw)
	}
	_ = c.nc.SetDeadline(time.Now().Add(2 * time.Second))
	if err := req.Write(c.nc); err != nil {
		c.t.Fatalf("GET %s: %v", path, err)
	}
	resp, err := http.ReadResponse(c.br, req)
	if err != nil {
		c.t.Fatalf("GET %s: %v", path, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// closedWithin reports whether the server closes c within d.
func (c *httpConn) closedWithin(d time.Duration) bool {
	_ = c.nc.SetReadDeadline(time.Now().Add(d))
	_, err := c.br.ReadByte()
	return err != nil && !errors.Is(err, os.ErrDeadlineExceeded)
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// TestHTTPIDsProtectedMode: without a password, IDs over HTTP are served
// to loopback only: another address gets 403 naming the fixes, and the
// connection closed; a password (then 401 without it) or protected mode
// off lets it in. Before, GET /id from any address was served an ID, where
// the ID port answered the same client -DENIED.
func TestHTTPIDsProtectedMode(t *testing.T) {
	ip := hostIP(t)
	w := startFake(t, nil)
	remote, local := serveIDsOn(t, w, ip), serveIDsOn(t, w, "127.0.0.1")

	c := dialHTTP(t, remote)
	resp, body := c.get("/id", "")
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "protected mode") {
		t.Fatalf("GET /id from %s without a password: %d %q; want 403, protected mode", ip, resp.StatusCode, body)
	}
	for _, fix := range []string{"--requirepass-file", "Authorization: Bearer", "--http-ids-tls", "--protected-mode no", "SNOWFLAKE_PROTECTED_MODE=no"} {
		if !strings.Contains(body, fix) {
			t.Errorf("the 403 does not name %s: %q", fix, body)
		}
	}
	if !c.closedWithin(time.Second) {
		t.Errorf("the connection denied by protected mode stays open")
	}
	if got := counterValue(t, w.srv.m.denied); got != 1 {
		t.Errorf("snowflake_worker_connections_denied_total = %v, want 1", got)
	}
	if resp, body := dialHTTP(t, local).get("/id", ""); resp.StatusCode != 200 {
		t.Errorf("GET /id from loopback: %d %q", resp.StatusCode, body)
	}

	w.srv.SetPasswords([][]byte{[]byte("http-ids-protected-pw")})
	c = dialHTTP(t, remote)
	if resp, body := c.get("/id", ""); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /id from %s with a password set, none sent: %d %q; want 401", ip, resp.StatusCode, body)
	}
	if resp, body := c.get("/id", "http-ids-protected-pw"); resp.StatusCode != 200 {
		t.Errorf("GET /id from %s with the password: %d %q", ip, resp.StatusCode, body)
	}

	open := startFake(t, func(c *Config) { c.ProtectedMode = false })
	if resp, body := dialHTTP(t, serveIDsOn(t, open, ip)).get("/id", ""); resp.StatusCode != 200 {
		t.Errorf("GET /id from %s with protected mode off: %d %q", ip, resp.StatusCode, body)
	}
}

// TestHTTPIDsPerAddrCap: 8 idle connections from one address (127.0.0.2)
// against MaxConns 8 leave a client from another address served:
// 127.0.0.2 holds at most HTTPIDsMaxConnsPerAddr (4), and the rest are
// closed at once, counted. Before, one address filled MaxConns and the
// other client hung.
func TestHTTPIDsPerAddrCap(t *testing.T) {
	w := startFake(t, func(c *Config) { c.MaxConns, c.HTTPIDsMaxConnsPerAddr = 8, 4 })
	addr := serveIDsOn(t, w, "127.0.0.1")
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}, Timeout: time.Second}
	for i := range 8 {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("idle connection %d: %v", i, err)
		}
		t.Cleanup(func() { c.Close() })
	}
	time.Sleep(200 * time.Millisecond) // the listener has taken what it takes
	hc := http.Client{Timeout: 2 * time.Second}
	resp, err := hc.Get("http://" + addr + "/id")
	if err != nil {
		t.Fatalf("GET /id beside 8 idle connections from 127.0.0.2 (MaxConns 8): %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET /id: %d", resp.StatusCode)
	}
	if got := counterValue(t, w.srv.m.idsRefused); got != 4 {
		t.Errorf("snowflake_worker_http_ids_connections_refused_total = %v, want 4", got)
	}
}

// TestHTTPIDsPreAuthIdle: with a password set, a connection that got a 401
// is closed after ReadTimeout (300 ms here) of silence, not IdleTimeout
// (5 min); one that sent the password keeps IdleTimeout. Before, the 401
// connection was kept for the 5 minutes, and one address's could fill
// MaxConns.
func TestHTTPIDsPreAuthIdle(t *testing.T) {
	w := startFake(t, func(c *Config) { c.ReadTimeout = 300 * time.Millisecond })
	w.srv.SetPasswords([][]byte{[]byte("http-ids-preauth-pw")})
	addr := serveIDsOn(t, w, "127.0.0.1")

	unauth, authed := dialHTTP(t, addr), dialHTTP(t, addr)
	if resp, body := unauth.get("/id", ""); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("GET /id without the password: %d %q", resp.StatusCode, body)
	}
	if resp, body := authed.get("/id", "http-ids-preauth-pw"); resp.StatusCode != 200 {
		t.Fatalf("GET /id with the password: %d %q", resp.StatusCode, body)
	}
	if !unauth.closedWithin(2 * time.Second) {
		t.Errorf("a connection that never sent the password is still open 2s after its 401 (ReadTimeout 300ms)")
	}
	time.Sleep(time.Second) // the authenticated one: idle past ReadTimeout
	if resp, body := authed.get("/id", "http-ids-preauth-pw"); resp.StatusCode != 200 {
		t.Errorf("GET /id on the authenticated connection after 1s idle: %d %q", resp.StatusCode, body)
	}
}

// TestHTTPIDsLockout: the answer to a connection's third wrong password
// closes it, as AUTH's does, and counts a lockout; a request without a
// password is no wrong password. Before, 20,000 wrong passwords on one
// connection were answered, then the right one served.
func TestHTTPIDsLockout(t *testing.T) {
	w := startFake(t, nil)
	w.srv.SetPasswords([][]byte{[]byte("http-ids-lockout-pw")})
	addr := serveIDsOn(t, w, "127.0.0.1")

	c := dialHTTP(t, addr)
	for range 5 {
		if resp, _ := c.get("/id", ""); resp.StatusCode != http.StatusUnauthorized || resp.Close {
			t.Fatalf("GET /id without a password: %d, close %v; want 401, kept open", resp.StatusCode, resp.Close)
		}
	}
	for i := 1; i <= MaxWrongPasswords; i++ {
		resp, body := c.get("/id", "wrong-password-guess")
		if resp.StatusCode != http.StatusUnauthorized || resp.Close != (i == MaxWrongPasswords) {
			t.Fatalf("wrong password %d: %d %q, close %v", i, resp.StatusCode, body, resp.Close)
		}
		if i == MaxWrongPasswords && !strings.Contains(body, "3 wrong passwords on this connection") {
			t.Errorf("the last 401 does not say why the connection closes: %q", body)
		}
	}
	if !c.closedWithin(time.Second) {
		t.Fatalf("the connection is open after %d wrong passwords", MaxWrongPasswords)
	}
	if got := counterValue(t, w.srv.auth.lockouts); got != 1 {
		t.Errorf("snowflake_worker_auth_lockouts_total = %v, want 1", got)
	}
	if got := counterValue(t, w.srv.auth.failures); got != MaxWrongPasswords {
		t.Errorf("snowflake_worker_auth_failures_total = %v, want %d", got, MaxWrongPasswords)
	}
	if resp, body := dialHTTP(t, addr).get("/id", "http-ids-lockout-pw"); resp.StatusCode != 200 {
		t.Errorf("the right password on a new connection: %d %q", resp.StatusCode, body)
	}
}

// TestHTTPIDsSizes: a request's head may be AuthMaxFrame bytes, an
// unauthenticated RESP request's limit (net/http's default took 20 KiB),
// and a request for IDs has no body (413, closed).
func TestHTTPIDsSizes(t *testing.T) {
	w := startFake(t, nil)
	addr := serveIDsOn(t, w, "127.0.0.1")
	send := func(req string) *http.Response {
		t.Helper()
		nc, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		_ = nc.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := io.WriteString(nc, req); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(nc), nil)
		if err != nil {
			t.Fatalf("%.40q…: %v", req, err)
		}
		resp.Body.Close()
		return resp
	}
	head := func(pad int) string {
		return "GET /id HTTP/1.1\r\nHost: x\r\nX-Pad: " + strings.Repeat("a", pad) + "\r\n"
	}
	small := head(AuthMaxFrame - 1000)
	if resp := send(small + "\r\n"); resp.StatusCode != 200 {
		t.Errorf("a head of %d bytes: %d, want 200", len(small)+2, resp.StatusCode)
	}
	big := head(AuthMaxFrame + 100)
	if resp := send(big + "\r\n"); resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("a head of %d bytes (limit %d): %d, want 431", len(big)+2, AuthMaxFrame, resp.StatusCode)
	}
	if resp := send("GET /id HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"); resp.StatusCode != http.StatusRequestEntityTooLarge || !resp.Close {
		t.Errorf("GET /id with a body: %d, close %v; want 413, closed", resp.StatusCode, resp.Close)
	}
}
