package worker

import (
	"bufio"
	"context"
	"crypto/tls"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"github.com/snowfleet/snowfleet/snowflake/tlsfiles"
)

// hostIP is an address of this machine that is not loopback (eth0's, say):
// a client that dials it from here comes from it.
func hostIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			if ln, err := net.Listen("tcp", net.JoinHostPort(n.IP.String(), "0")); err == nil {
				ln.Close()
				return n.IP.String()
			}
		}
	}
	t.Fatalf("the test needs an IPv4 address other than loopback on this machine: %v", addrs)
	return ""
}

// listenOn serves w's server on another plaintext listener at ip.
func listenOn(t *testing.T, w *testWorker, ip string) string {
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = w.srv.Serve(ln) }()
	return ln.Addr().String()
}

// TestProtectedMode: without a password, a client from an address other
// than loopback gets Redis's -DENIED error (redis-cli shows it; go-redis
// fails) and a close, and loopback clients are served; a password, a
// verified client certificate on the TLS port, or ProtectedMode off lets
// it in. Before, a worker without a password served anyone.
func TestProtectedMode(t *testing.T) {
	zk := startZK(t)
	ip := hostIP(t)
	w := startWorker(t, zk.Addr(), true, nil)
	remote := listenOn(t, w, ip)
	ctx := context.Background()

	nc, err := net.DialTimeout("tcp", remote, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	r := &raw{t: t, nc: nc, br: bufio.NewReader(nc)}
	r.send("NEXTID\r\n")
	got := r.expectPrefix("-DENIED snowflaked is running in protected mode")
	for _, fix := range []string{"--requirepass-file", "--protected-mode no", "SNOWFLAKE_PROTECTED_MODE=no", "--tls-auth-clients yes"} {
		if !strings.Contains(got, fix) {
			t.Errorf("-DENIED does not name %s: %q", fix, got)
		}
	}
	r.expectClosed()
	nc.Close()

	// go-redis reads -DENIED as HELLO's answer, then fails on the closed
	// connection (it pipelines CLIENT SETINFO next): an error either way.
	gr := w.client(func(o *redis.Options) { o.Addr = remote })
	if id, err := gr.Do(ctx, "NEXTID").Int64(); err == nil {
		t.Errorf("go-redis from %s: served ID %d without a password", ip, id)
	}
	host, port, _ := net.SplitHostPort(remote)
	out, _ := exec.Command("redis-cli", "-h", host, "-p", port, "NEXTID").CombinedOutput()
	if !strings.Contains(string(out), "DENIED") {
		t.Errorf("redis-cli from %s: %q; want DENIED", ip, out)
	}
	local := w.client()
	if id, err := local.Do(ctx, "NEXTID").Int64(); err != nil || id <= 0 {
		t.Errorf("go-redis from loopback: %d, %v", id, err)
	}
	var m dto.Metric
	if err := w.srv.m.denied.Write(&m); err != nil || m.GetCounter().GetValue() < 3 {
		t.Errorf("snowflake_worker_connections_denied_total = %v (%v), want at least 3", m.GetCounter().GetValue(), err)
	}

	// Mutual TLS authenticates as a password does: a verified certificate
	// is served, a client without one is denied.
	p := newTestPKI(t)
	r2, err := NewCertReloader(TLSFiles{Files: tlsfiles.Files{CertFile: p.certFile, KeyFile: p.keyFile, CACertFile: p.caFile}, AuthClients: "optional"}, nil, nil, "protected")
	if err != nil {
		t.Fatal(err)
	}
	tln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = w.srv.ServeTLS(tln, r2.Config()) }()
	withCert := w.client(func(o *redis.Options) { o.Addr, o.TLSConfig = tln.Addr().String(), p.clientTLS(true) })
	if id, err := withCert.Do(ctx, "NEXTID").Int64(); err != nil || id <= 0 {
		t.Errorf("go-redis over TLS with a client certificate from %s: %d, %v", ip, id, err)
	}
	tc, err := tls.Dial("tcp", tln.Addr().String(), p.clientTLS(false))
	if err != nil {
		t.Fatal(err)
	}
	r = &raw{t: t, nc: tc, br: bufio.NewReader(tc)}
	r.expectPrefix("-DENIED snowflaked is running in protected mode")
	r.expectClosed()
	tc.Close()

	// A password turns protected mode off: AUTH and serve.
	w.srv.SetPasswords([][]byte{[]byte("protected-mode-password")})
	authed := w.client(func(o *redis.Options) { o.Addr, o.Password = remote, "protected-mode-password" })
	if id, err := authed.Do(ctx, "NEXTID").Int64(); err != nil || id <= 0 {
		t.Errorf("go-redis from %s with the password: %d, %v", ip, id, err)
	}

	// --protected-mode no: served without a password.
	w.stop() // one fleet at a time on the ensemble
	open := startWorker(t, zk.Addr(), true, func(c *Config) { c.ProtectedMode = false })
	openAddr := listenOn(t, open, ip)
	if id, err := open.client(func(o *redis.Options) { o.Addr = openAddr }).Do(ctx, "NEXTID").Int64(); err != nil || id <= 0 {
		t.Errorf("go-redis from %s with protected mode off: %d, %v", ip, id, err)
	}
}
