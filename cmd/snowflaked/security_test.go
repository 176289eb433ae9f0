package main

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/integration/zktest"
)

// The binary with every security option at once: ZooKeeper over TLS only
// (--zk-tls-*), the admin port over TLS (--http-tls), and a password
// (--requirepass-file) that SIGHUP rotates: after the file is replaced and
// the signal sent, the new password works, the old one is refused, and a
// connection authenticated with the old one is closed.
func TestDaemonSecurity(t *testing.T) {
	bin := build(t)
	certs := zktest.NewCerts(t)
	zks := zktest.StartWith(t, zktest.Options{TLS: certs})
	pw := filepath.Join(t.TempDir(), "requirepass")
	writeSecret(t, pw, "old-secret-0123456789\n")

	pem, err := os.ReadFile(certs.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	admin := &http.Client{Timeout: 2 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}}}
	d := startDaemonAdmin(t, bin, nil, admin,
		"--zk", zks.TLSAddr(), "--zk-root", "/secure", "--session-timeout", "5s",
		"--zk-tls-cert-file", certs.ClientCertFile, "--zk-tls-key-file", certs.ClientKeyFile, "--zk-tls-ca-cert-file", certs.CAFile,
		"--requirepass-file", pw,
		// server.pem holds the key and the certificate: one file serves as both.
		"--http-tls", "--tls-cert-file", certs.ServerFile, "--tls-key-file", certs.ServerFile, "--tls-auth-clients", "no")
	d.waitReady(30 * time.Second)

	// The admin port speaks TLS only.
	plain := http.Client{Timeout: 2 * time.Second}
	if resp, err := plain.Get("http://127.0.0.1:" + d.http + "/readyz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Fatalf("plaintext HTTP on the --http-tls port: %d", resp.StatusCode)
		}
	}

	cli := func(args ...string) string {
		out, _ := exec.Command("redis-cli", append([]string{"-h", "127.0.0.1", "-p", d.port, "--no-auth-warning"}, args...)...).CombinedOutput()
		return strings.TrimSpace(string(out))
	}
	isID := func(s string) bool { _, err := strconv.ParseInt(s, 10, 64); return err == nil }
	if out := cli("NEXTID"); !strings.Contains(out, "NOAUTH") {
		t.Fatalf("NEXTID without AUTH = %q, want NOAUTH", out)
	}
	if out := cli("-a", "old-secret-0123456789", "NEXTID"); !isID(out) {
		t.Fatalf("NEXTID with the password = %q", out)
	}

	// A connection authenticated with the old password, held across the
	// rotation: closed by it.
	held, err := net.DialTimeout("tcp", "127.0.0.1:"+d.port, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	heldR := bufio.NewReader(held)
	_ = held.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := held.Write([]byte("AUTH old-secret-0123456789\r\n")); err != nil {
		t.Fatal(err)
	}
	if line, err := heldR.ReadString('\n'); line != "+OK\r\n" {
		t.Fatalf("AUTH with the old password: %q, %v", line, err)
	}

	writeSecret(t, pw, "new-secret-0123456789\n")
	if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for out := cli("-a", "new-secret-0123456789", "NEXTID"); !isID(out); out = cli("-a", "new-secret-0123456789", "NEXTID") {
		if time.Now().After(deadline) {
			t.Fatalf("the new password after SIGHUP: %q", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if out := cli("-a", "old-secret-0123456789", "NEXTID"); !strings.Contains(out, "WRONGPASS") {
		t.Fatalf("the old password after the rotation: %q, want WRONGPASS", out)
	}
	_ = held.SetDeadline(time.Now().Add(10 * time.Second))
	if line, err := heldR.ReadString('\n'); err == nil {
		t.Fatalf("the connection authenticated with the old password is still open after the rotation: read %q", line)
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("the connection authenticated with the old password is still open 10s after the rotation")
	}
	if !strings.Contains(d.out.String(), "closed_connections=1") {
		t.Errorf("the rotation's log does not say it closed one connection:\n%s", d.out.String())
	}
	if strings.Contains(d.out.String(), "old-secret") || strings.Contains(d.out.String(), "new-secret") {
		t.Fatal("a password is in the log")
	}
	if code := d.stop(); code != 0 {
		t.Fatalf("SIGTERM: exit %d", code)
	}
}

// writeSecret replaces path atomically with a file only its owner reads.
func writeSecret(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path+".tmp", []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}
