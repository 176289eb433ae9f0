package worker

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"github.com/snowfleet/snowfleet/integration/testenv"
	"github.com/snowfleet/snowfleet/snowflake/tlsfiles"
	"github.com/snowfleet/snowfleet/worker/client"
)

// testPKI is a CA the test makes, with a server certificate for
// 127.0.0.1/localhost and a client certificate, as PEM files in dir.
type testPKI struct {
	dir                       string
	caKey                     *ecdsa.PrivateKey
	ca                        *x509.Certificate
	caFile, certFile, keyFile string
	clientCert, clientKey     string
	pool                      *x509.CertPool
	clientPair                tls.Certificate
}

func newTestPKI(t testing.TB) *testPKI {
	t.Helper()
	p := &testPKI{dir: t.TempDir()}
	p.caKey, _ = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &p.caKey.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	p.ca, _ = x509.ParseCertificate(der)
	p.pool = x509.NewCertPool()
	p.pool.AddCert(p.ca)
	p.caFile = p.write(t, "ca.pem", "CERTIFICATE", der)
	p.certFile, p.keyFile = p.issue(t, "server", 2, x509.ExtKeyUsageServerAuth)
	p.clientCert, p.clientKey = p.issue(t, "client", 3, x509.ExtKeyUsageClientAuth)
	if p.clientPair, err = tls.LoadX509KeyPair(p.clientCert, p.clientKey); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p *testPKI) write(t testing.TB, name, typ string, der []byte) string {
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path+".tmp", pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil { // atomic, as a secret volume swaps files
		t.Fatal(err)
	}
	return path
}

// issue makes a certificate signed by the CA, serial given, into name.pem
// and name-key.pem.
func (p *testPKI) issue(t testing.TB, name string, serial int64, usage x509.ExtKeyUsage) (string, string) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	// The key first: a reload between the two sees a mismatch and keeps the old.
	k := p.write(t, name+"-key.pem", "EC PRIVATE KEY", kder)
	c := p.write(t, name+".pem", "CERTIFICATE", der)
	return c, k
}

func (p *testPKI) clientTLS(withCert bool) *tls.Config {
	c := &tls.Config{RootCAs: p.pool, ServerName: "127.0.0.1"}
	if withCert {
		c.Certificates = []tls.Certificate{p.clientPair}
	}
	return c
}

// startTLS serves w's server on a TLS listener too; it stops with w.
func startTLS(t *testing.T, w *testWorker, files TLSFiles) string {
	r, err := NewCertReloader(files, nil, nil, "test")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = w.srv.ServeTLS(ln, r.Config()) }()
	return ln.Addr().String()
}

func TestTLSFiles(t *testing.T) {
	p := newTestPKI(t)
	for name, c := range map[string]struct {
		f    TLSFiles
		want string
	}{
		"no key":         {TLSFiles{Files: tlsfiles.Files{CertFile: p.certFile}, AuthClients: "no"}, "both required"},
		"bad mode":       {TLSFiles{Files: tlsfiles.Files{CertFile: p.certFile, KeyFile: p.keyFile}, AuthClients: "maybe"}, `auth-clients "maybe"`},
		"yes without CA": {TLSFiles{Files: tlsfiles.Files{CertFile: p.certFile, KeyFile: p.keyFile}, AuthClients: "yes"}, "needs a CA file"},
		"mismatch":       {TLSFiles{Files: tlsfiles.Files{CertFile: p.certFile, KeyFile: p.clientKey}, AuthClients: "no"}, "private key does not match"},
		"missing":        {TLSFiles{Files: tlsfiles.Files{CertFile: p.dir + "/nope.pem", KeyFile: p.keyFile}, AuthClients: "no"}, "no such file"},
		"CA not PEM":     {TLSFiles{Files: tlsfiles.Files{CertFile: p.certFile, KeyFile: p.keyFile, CACertFile: p.keyFile}, AuthClients: "yes"}, "holds no PEM certificate"},
	} {
		if _, err := NewCertReloader(c.f, nil, nil, "x"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want an error saying %q", name, err, c.want)
		}
	}
}

// TestTLS: the TLS port with mutual TLS for go-redis, the Go client (with
// a password) and redis-cli --tls; plaintext, garbage and a stalled
// handshake cost only their connection; a rotated certificate is served
// without a restart.
func TestTLS(t *testing.T) {
	p := newTestPKI(t)
	w := startFake(t, func(c *Config) { c.ReadTimeout = 500 * time.Millisecond })
	addr := startTLS(t, w, TLSFiles{Files: tlsfiles.Files{CertFile: p.certFile, KeyFile: p.keyFile, CACertFile: p.caFile}, AuthClients: "yes"})
	ctx := context.Background()

	gr := w.client(func(o *redis.Options) { o.Addr, o.TLSConfig = addr, p.clientTLS(true) })
	if id, err := gr.Do(ctx, "NEXTID").Int64(); err != nil || id <= 0 {
		t.Fatalf("go-redis over TLS: %d, %v", id, err)
	}

	w.srv.SetPasswords([][]byte{[]byte("pw")})
	c, err := client.DialWith(ctx, addr, client.DialOptions{Password: "pw", TLS: p.clientTLS(true)})
	if err != nil {
		t.Fatalf("Go client over TLS with a password: %v", err)
	}
	if id, err := c.Next(); err != nil || id <= 0 {
		t.Fatalf("Go client NEXTID over TLS: %d, %v", id, err)
	}
	c.Close()
	if _, err := client.DialWith(ctx, addr, client.DialOptions{Password: "no", TLS: p.clientTLS(true)}); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Fatalf("Go client with a wrong password: %v", err)
	}
	w.srv.SetPasswords(nil)
	// Setting the password closed go-redis's connection, which had needed
	// none: a new client.
	gr = w.client(func(o *redis.Options) { o.Addr, o.TLSConfig = addr, p.clientTLS(true) })

	t.Run("redis-cli", func(t *testing.T) {
		testenv.Require(t, "redis-cli")
		host, port, _ := net.SplitHostPort(addr)
		out, err := exec.Command("redis-cli", "--tls", "--cacert", p.caFile, "--cert", p.clientCert, "--key", p.clientKey,
			"-h", host, "-p", port, "NEXTID").CombinedOutput()
		if err != nil || mustInt(strings.TrimSpace(string(out))) <= 0 {
			t.Fatalf("redis-cli --tls NEXTID: %v %q", err, out)
		}
	})

	// No client certificate with tls-auth-clients yes: refused (in TLS 1.3
	// the client learns it at its first read).
	nc, err := client.DialWith(ctx, addr, client.DialOptions{TLS: p.clientTLS(false)})
	if err == nil {
		_, err = nc.Next()
		nc.Close()
	}
	if err == nil {
		t.Fatal("a client without a certificate was served under tls-auth-clients yes")
	}

	// Plaintext, garbage and half a handshake: closed, the rest served.
	failures := func() float64 {
		var m dto.Metric
		_ = w.srv.tlsFailures.Write(&m)
		return m.GetCounter().GetValue()
	}
	before := failures()
	for _, junk := range []string{"PING\r\n", "\x16\x03\x01\x00\x05hello", "\x00\xff garbage"} {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = nc.Write([]byte(junk))
		_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		start := time.Now()
		buf := make([]byte, 64)
		for {
			if _, err := nc.Read(buf); err != nil {
				if ne, ok := err.(net.Error); ok && ne.Timeout() {
					t.Fatalf("%q: the TLS port kept the connection open for 5s (read timeout 500ms)", junk)
				}
				break
			}
		}
		nc.Close()
		t.Logf("%q closed after %v", junk, time.Since(start).Round(time.Millisecond))
	}
	if id, err := gr.Do(ctx, "NEXTID").Int64(); err != nil || id <= 0 {
		t.Fatalf("go-redis after the junk: %d, %v", id, err)
	}
	if got := failures() - before; got < 3 {
		t.Fatalf("handshake failures counted: %v, want 3", got)
	}

	// Rotation: a new certificate in the same files is served within a
	// reload period, on new connections, without a restart.
	p.certFile, p.keyFile = p.issue(t, "server", 99, x509.ExtKeyUsageServerAuth)
	deadline := time.Now().Add(5 * time.Second)
	for {
		tc, err := tls.Dial("tcp", addr, p.clientTLS(true))
		if err != nil {
			t.Fatal(err)
		}
		serial := tc.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
		tc.Close()
		if serial == 99 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still serial %d 5s after the certificate was replaced", serial)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Past --max-conns a refused TLS connection is answered off the accept
// loop: one that never starts its handshake used to freeze the TLS port
// (reject's write ran the handshake on the accept goroutine, reading with
// no deadline), so a slot freed later was never taken.
func TestTLSRejectSilentClient(t *testing.T) {
	p := newTestPKI(t)
	w := startFake(t, func(c *Config) { c.MaxConns = 1 })
	addr := startTLS(t, w, TLSFiles{Files: tlsfiles.Files{CertFile: p.certFile, KeyFile: p.keyFile}, AuthClients: "no"})
	cfg := p.clientTLS(false)
	first, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.Write([]byte("PING\r\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if n, err := first.Read(buf); err != nil || !strings.HasPrefix(string(buf[:n]), "+PONG") {
		t.Fatalf("first TLS client: %q, %v", buf[:n], err)
	}
	silent, err := net.Dial("tcp", addr) // past MaxConns, and says nothing
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	time.Sleep(200 * time.Millisecond)
	first.Close()
	// The slot is free again: a new client must be served.
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, cfg)
		if err == nil {
			_ = c.SetDeadline(time.Now().Add(2 * time.Second))
			_, _ = c.Write([]byte("PING\r\n"))
			n, err := c.Read(buf)
			c.Close()
			if err == nil && strings.HasPrefix(string(buf[:n]), "+PONG") {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no TLS client served 10s after a slot freed, with a silent connection refused: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
