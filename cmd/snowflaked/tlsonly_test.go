package main

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zkconn"
	"github.com/snowfleet/snowfleet/integration/zktest"
)

// --listen "" with --tls-listen: no plaintext ID port at all (mutual TLS
// cannot be bypassed on it), the lease advertises the TLS port, and IDs
// come over TLS.
func TestPlaintextPortOff(t *testing.T) {
	bin := build(t)
	zks := zktest.Start(t)
	certs := zktest.NewCerts(t)
	tlsAddr := "127.0.0.1:" + freePort(t)
	d := startDaemon(t, bin, nil, "--zk", zks.Addr(), "--zk-root", "/tls-only", "--listen", "", "--tls-listen", tlsAddr,
		"--tls-cert-file", certs.ServerFile, "--tls-key-file", certs.ServerFile, "--tls-auth-clients", "no")
	d.waitReady(20 * time.Second)
	if c, err := net.DialTimeout("tcp", "127.0.0.1:"+d.port, time.Second); err == nil {
		c.Close()
		t.Fatalf("the plaintext port %s answers with --listen \"\"", d.port)
	}
	pem, err := os.ReadFile(certs.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	c, err := tls.Dial("tcp", tlsAddr, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatalf("TLS port: %v", err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("NEXTID\r\n")); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, ":") {
		t.Fatalf("NEXTID over TLS: %q, %v", line, err)
	}
	conn, err := zkconn.Dial([]string{zks.Addr()}, "", 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	m, err := tree.ReadSlotMap(conn, "/tls-only")
	if err != nil || len(m.Leases) != 1 || m.Leases[0].Addr != tlsAddr {
		t.Fatalf("leases %+v (%v): want one advertising the TLS port %s", m.Leases, err, tlsAddr)
	}
	c.Close()
	start := time.Now()
	if rc := d.stop(); rc != 0 || !strings.Contains(d.out.String(), "released slot") {
		t.Fatalf("SIGTERM of a TLS-only worker: exit %d after %v:\n%s", rc, time.Since(start), d.out.String())
	}
}
