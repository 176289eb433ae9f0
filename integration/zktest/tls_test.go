package zktest

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// With Options.TLS the server answers a TLS handshake on TLSAddr with its
// certificate, signed by the test CA and naming 127.0.0.1, and still
// serves four-letter commands on the plaintext port.
func TestServerTLS(t *testing.T) {
	certs := NewCerts(t)
	s := StartWith(t, Options{TLS: certs})
	if s.TLSAddr() == "" || s.TLSAddr() == s.Addr() {
		t.Fatalf("TLSAddr %q beside Addr %q", s.TLSAddr(), s.Addr())
	}
	pem, err := os.ReadFile(certs.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	cert, err := tls.LoadX509KeyPair(certs.ClientCertFile, certs.ClientKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	c, err := tls.DialWithDialer(&netDialer, "tcp", s.TLSAddr(),
		&tls.Config{RootCAs: pool, ServerName: "127.0.0.1", Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatalf("TLS handshake with the secure port: %v", err)
	}
	c.Close()
	if out, err := FourLetter(s.Addr(), "srvr", 2*time.Second); err != nil || !strings.Contains(out, "Mode:") {
		t.Fatalf("srvr on the plaintext port: %q %v", out, err)
	}
}

var netDialer = net.Dialer{Timeout: 5 * time.Second}
