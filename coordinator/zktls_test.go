package coordinator

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zkconn"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/integration/zktest"
	"github.com/snowfleet/snowfleet/snowflake/configerr"
	"github.com/snowfleet/snowfleet/snowflake/tlsfiles"
)

// startTLSZK is a ZooKeeper with a secureClientPort and the certificates
// it trusts.
func startTLSZK(t *testing.T) (*zktest.Server, *zktest.Certs) {
	t.Helper()
	certs := zktest.NewCerts(t)
	return zktest.StartWith(t, zktest.Options{TLS: certs}), certs
}

func clientTLS(c *zktest.Certs) tlsfiles.Files {
	return tlsfiles.Files{CertFile: c.ClientCertFile, KeyFile: c.ClientKeyFile, CACertFile: c.CAFile}
}

// A worker on the secure port only, with digest auth as well, claims,
// renews and releases as over plaintext; a reader over TLS sees its lease.
func TestClaimRenewReleaseOverTLS(t *testing.T) {
	zs, certs := startTLSZK(t)
	rec := newRecorder()
	cfg := testConfig(zs.TLSAddr())
	cfg.TLS = clientTLS(certs)
	cfg.Auth = "fleet:s3cret"
	w := startWorker(t, "tls", cfg, rec)
	w.waitReady(15 * time.Second)
	st := w.c.Status()
	g := w.c.Generator()
	c0 := g.Ceiling()
	waitFor(t, 5*time.Second, "ceiling raised by renewals over TLS", func() bool { return g.Ceiling() > c0 })

	obs, err := zkconn.DialTLS([]string{zs.TLSAddr()}, "", cfg.TLS, 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer obs.Close()
	waitFor(t, 15*time.Second, "observer's session over TLS", func() bool { return obs.State() == zk.StateHasSession })
	m, err := tree.ReadSlotMap(obs, cfg.Root)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Leases) != 1 || m.Leases[0].Node != st.LeaseNode {
		t.Fatalf("slot map over TLS %+v, want the lease %s", m.Leases, st.LeaseNode)
	}
	slot := m.Leases[0].Slot
	w.Stop()
	last := g.LastMs()
	if r, _ := readSlot(t, obs, cfg.Root, slot); r.ReservedUntilMs != last {
		t.Fatalf("released reservation %d, want the last issued %d", r.ReservedUntilMs, last)
	}
	if names, _, _ := obs.Children(zklayout.LeasesPath(cfg.Root)); len(names) != 0 {
		t.Fatalf("lease nodes left after release: %v", names)
	}
	rec.checkDisjoint(t)
}

// noSession asserts that conn gets no session within d (the server or the
// client refused the connection), then closes it.
func noSession(t *testing.T, what string, conn *zk.Conn, d time.Duration) {
	t.Helper()
	defer conn.Close()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if conn.State() == zk.StateHasSession {
			t.Errorf("%s: got a session", what)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The secure port refuses a client without a certificate and one with a
// certificate of another CA; a client that trusts another CA refuses the
// server; plaintext on the secure port gets nothing. A valid client, for
// contrast, gets its session at once.
func TestZKTLSRefused(t *testing.T) {
	zs, certs := startTLSZK(t)
	good, err := zkconn.DialTLS([]string{zs.TLSAddr()}, "", clientTLS(certs), 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer good.Close()
	waitFor(t, 15*time.Second, "valid client's session", func() bool { return good.State() == zk.StateHasSession })
	if _, _, err := good.Exists("/"); err != nil {
		t.Fatalf("valid client: %v", err)
	}
	for _, c := range []struct {
		what  string
		files tlsfiles.Files
	}{
		{"no client certificate", tlsfiles.Files{CACertFile: certs.CAFile}},
		{"client certificate of another CA", tlsfiles.Files{CertFile: certs.OtherClientCertFile, KeyFile: certs.OtherClientKeyFile, CACertFile: certs.CAFile}},
		{"client trusting another CA", tlsfiles.Files{CertFile: certs.ClientCertFile, KeyFile: certs.ClientKeyFile, CACertFile: certs.OtherCAFile}},
		{"plaintext", tlsfiles.Files{}},
	} {
		conn, err := zkconn.DialTLS([]string{zs.TLSAddr()}, "", c.files, 2*time.Second, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		noSession(t, c.what, conn, 3*time.Second)
	}
	// The plaintext port is not the secure one: TLS there gets nothing.
	conn, err := zkconn.DialTLS([]string{zs.Addr()}, "", clientTLS(certs), 2*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	noSession(t, "TLS on the plaintext port", conn, 2*time.Second)
}

// A worker started with a certificate the server refuses serves once the
// files are replaced by valid ones, with no restart: the dialer reads them
// again at the next connection.
func TestZKTLSReloadsFiles(t *testing.T) {
	zs, certs := startTLSZK(t)
	dir := t.TempDir()
	files := tlsfiles.Files{CertFile: dir + "/cert.pem", KeyFile: dir + "/key.pem", CACertFile: certs.CAFile}
	copyFile(t, certs.OtherClientCertFile, files.CertFile)
	copyFile(t, certs.OtherClientKeyFile, files.KeyFile)
	cfg := testConfig(zs.TLSAddr())
	cfg.TLS = files
	plain := cfg
	plain.Servers, plain.TLS = []string{zs.Addr()}, tlsfiles.Files{}
	initFleet(t, plain) // through the plaintext port, which the server also serves
	w := startWorkerBare(t, "rotated", cfg, nil, nil, testLogger(t, "rotated"))
	time.Sleep(2 * time.Second)
	if w.c.Ready() {
		t.Fatal("ready with a client certificate of another CA")
	}
	copyFile(t, certs.ClientKeyFile, files.KeyFile)
	copyFile(t, certs.ClientCertFile, files.CertFile)
	w.waitReady(20 * time.Second)
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	// Written aside and renamed, as a Kubernetes secret update is atomic.
	if err := os.WriteFile(to+".tmp", b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(to+".tmp", to); err != nil {
		t.Fatal(err)
	}
}

// Validate names the TLS field that is wrong: a key without a certificate,
// a missing file, a certificate that does not match its key, a CA file
// that holds no certificate.
func TestZKTLSValidate(t *testing.T) {
	certs := zktest.NewCerts(t)
	notPEM := t.TempDir() + "/not.pem"
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		files tlsfiles.Files
		field string
	}{
		{tlsfiles.Files{KeyFile: certs.ClientKeyFile}, "TLS.CertFile"},
		{tlsfiles.Files{CertFile: certs.ClientCertFile}, "TLS.KeyFile"},
		{tlsfiles.Files{CertFile: "/nonexistent/cert.pem", KeyFile: certs.ClientKeyFile}, "TLS.CertFile"},
		{tlsfiles.Files{CertFile: certs.ClientCertFile, KeyFile: "/nonexistent/key.pem"}, "TLS.KeyFile"},
		{tlsfiles.Files{CertFile: certs.ClientCertFile, KeyFile: certs.OtherClientKeyFile}, "TLS.CertFile"},
		{tlsfiles.Files{CACertFile: notPEM}, "TLS.CACertFile"},
		{tlsfiles.Files{CACertFile: "/nonexistent/ca.pem"}, "TLS.CACertFile"},
	} {
		cfg := testConfig("127.0.0.1:2181")
		cfg.TLS = c.files
		err := cfg.Validate()
		var ce *configerr.Error
		if !errors.As(err, &ce) || ce.Field != c.field || !errors.Is(err, zkconn.ErrTLSFiles) {
			t.Errorf("%+v: Validate %v, want a ConfigError on %s", c.files, err, c.field)
		}
	}
	cfg := testConfig("127.0.0.1:2181")
	cfg.TLS = clientTLS(certs)
	if err := cfg.Validate(); err != nil {
		t.Errorf("valid files: %v", err)
	}
}
