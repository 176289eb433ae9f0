package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/integration/zktest"
	"github.com/snowfleet/snowfleet/snowflake"
)

// TestHTTPIDsFlags: --http-ids is never the admin port, and
// --http-ids-tls needs it; with the ID port TLS only, --http-ids needs
// --http-ids-tls (before, it served plaintext IDs beside a mutual-TLS ID
// port); the errors name the flags.
func TestHTTPIDsFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string // "" = accepted
	}{
		{[]string{"--http-ids", ":7611"}, ""},
		{[]string{"--http-ids", ":7610"}, "--http-ids :7610 is on the admin port (--http :7610)"},
		{[]string{"--http", "127.0.0.1:9000", "--http-ids", "0.0.0.0:9000"}, "is on the admin port"},
		{[]string{"--http-ids", "7611"}, `--http-ids "7611": want host:port`},
		{[]string{"--http-ids-tls"}, "--http-ids-tls needs --http-ids"},
		// The ID port TLS only: plaintext HTTP would be a way around its
		// mutual TLS.
	} {
		_, err := parseFlags(c.args, io.Discard)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
	// The ID port TLS only: plaintext HTTP would be a way around its
	// mutual TLS.
	certs := zktest.NewCerts(t)
	tlsOnly := []string{"--listen", "", "--tls-listen", ":7612", "--http-ids", ":7611",
		"--tls-cert-file", certs.ServerFile, "--tls-key-file", certs.ServerFile, "--tls-ca-cert-file", certs.CAFile}
	want := `--http-ids :7611 would serve IDs in plaintext while the ID port is TLS only (--listen "" with --tls-listen): add --http-ids-tls`
	if _, err := parseFlags(tlsOnly, io.Discard); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%v: %v, want %q", tlsOnly, err, want)
	}
	if _, err := parseFlags(append(tlsOnly, "--http-ids-tls"), io.Discard); err != nil {
		t.Errorf("%v --http-ids-tls: %v", tlsOnly, err)
	}
}

// TestHTTPIDsTLS: the built daemon serves --http-ids over TLS with the
// --tls-* files (--http-ids-tls), with the password as a bearer token, and
// drains it at SIGTERM (exit 0).
func TestHTTPIDsTLS(t *testing.T) {
	bin := build(t)
	zks := zktest.Start(t)
	certs := zktest.NewCerts(t)
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "pw")
	if err := os.WriteFile(pwFile, []byte("a-password-of-some-length\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	idsAddr := "127.0.0.1:" + freePort(t)
	d := startDaemon(t, bin, nil, "--zk", zks.Addr(), "--zk-root", "/http-ids-tls", "--http-ids", idsAddr, "--http-ids-tls",
		"--tls-cert-file", certs.ServerFile, "--tls-key-file", certs.ServerFile, "--tls-auth-clients", "no",
		"--requirepass-file", pwFile)
	d.waitReady(20 * time.Second)
	pem, err := os.ReadFile(certs.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}}}
	get := func(token string) (int, string) {
		req, _ := http.NewRequest("GET", "https://"+idsAddr+"/ids?count=3&format=short", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("GET over TLS: %v", err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get(""); code != http.StatusUnauthorized {
		t.Fatalf("no token: %d %q", code, body)
	}
	code, body := get("a-password-of-some-length")
	var got struct{ IDs []string }
	if err := json.Unmarshal([]byte(body), &got); code != 200 || err != nil || len(got.IDs) != 3 {
		t.Fatalf("GET /ids over TLS: %d %q (%v)", code, body, err)
	}
	for _, s := range got.IDs {
		if _, err := snowflake.ParseShort(s); err != nil {
			t.Fatal(err)
		}
	}
	if resp, err := http.Get("http://" + idsAddr + "/id"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatalf("plain HTTP served IDs on the --http-ids-tls port")
		}
	}
	if rc := d.stop(); rc != 0 {
		t.Fatalf("SIGTERM: exit %d", rc)
	}
}
