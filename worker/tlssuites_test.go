package worker

import (
	"crypto/tls"
	"net"
	"strings"
	"testing"

	"github.com/snowfleet/snowfleet/snowflake/tlsfiles"
)

// TestTLS12Suites: a TLS 1.2 client gets an AEAD suite with forward
// secrecy or no connection. Every suite Go knows is offered alone; only
// ECDHE with GCM or ChaCha20-Poly1305 may be accepted. With Go's defaults
// the two ECDHE-ECDSA AES-CBC-SHA suites were accepted as well.
func TestTLS12Suites(t *testing.T) {
	p := newTestPKI(t)
	r, err := NewCertReloader(TLSFiles{Files: tlsfiles.Files{CertFile: p.certFile, KeyFile: p.keyFile}, AuthClients: "no"}, nil, nil, "suites")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = tls.Server(c, r.Config()).Handshake()
			}()
		}
	}()
	var accepted []string
	for _, s := range append(tls.CipherSuites(), tls.InsecureCipherSuites()...) {
		cfg := p.clientTLS(false)
		cfg.MaxVersion, cfg.CipherSuites = tls.VersionTLS12, []uint16{s.ID}
		c, err := tls.Dial("tcp", ln.Addr().String(), cfg)
		if err != nil {
			continue
		}
		got := c.ConnectionState().CipherSuite
		c.Close()
		accepted = append(accepted, s.Name)
		name := tls.CipherSuiteName(got)
		if !strings.HasPrefix(name, "TLS_ECDHE_") || !(strings.Contains(name, "_GCM_") || strings.Contains(name, "CHACHA20_POLY1305")) {
			t.Errorf("TLS 1.2 handshake with %s accepted: want only ECDHE with an AEAD cipher", name)
		}
	}
	if len(accepted) == 0 {
		t.Fatal("no TLS 1.2 suite was accepted")
	}
	t.Logf("TLS 1.2 suites accepted with an ECDSA certificate: %v", accepted)
}
