package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/snowfleet/snowfleet/integration/zktest"
)

// Against an ensemble's secureClientPort, init, fleets and slots work with
// the --zk-tls-* flags (or their environment variables); without a client
// certificate they fail, and a bad file is a usage error naming the flag.
func TestZKTLSFlags(t *testing.T) {
	certs := zktest.NewCerts(t)
	zs := zktest.StartWith(t, zktest.Options{TLS: certs})
	tlsArgs := []string{"--zk-tls-cert-file", certs.ClientCertFile, "--zk-tls-key-file", certs.ClientKeyFile, "--zk-tls-ca-cert-file", certs.CAFile}
	var out, errb bytes.Buffer
	if rc := runInit(append([]string{"--zk", zs.TLSAddr(), "--zk-root", "/tls", "--datacenters", "0-3", "--timeout", "20s"}, tlsArgs...), &out, &errb); rc != exitOK {
		t.Fatalf("init over TLS: rc %d out %q err %q", rc, out.String(), errb.String())
	}
	out.Reset()
	errb.Reset()
	if rc := runFleets(append(append([]string{"--timeout", "20s"}, tlsArgs...), zs.TLSAddr()), &out, &errb); rc != exitOK || !strings.Contains(out.String(), "/tls") {
		t.Fatalf("fleets over TLS: rc %d out %q err %q", rc, out.String(), errb.String())
	}
	t.Setenv("SNOWFLAKE_ZK_TLS_CERT_FILE", certs.ClientCertFile)
	t.Setenv("SNOWFLAKE_ZK_TLS_KEY_FILE", certs.ClientKeyFile)
	t.Setenv("SNOWFLAKE_ZK_TLS_CA_CERT_FILE", certs.CAFile)
	sl := slotsJSON(t, []string{"--zk", zs.TLSAddr(), "--zk-root", "/tls", "--json", "--timeout", "20s"})
	if sl.Owned != 128 || sl.Datacenters != "0-3" {
		t.Fatalf("slots over TLS (flags from the environment): owned %d datacenters %q", sl.Owned, sl.Datacenters)
	}
	// No client certificate: the server refuses, the command fails.
	t.Setenv("SNOWFLAKE_ZK_TLS_CERT_FILE", "")
	t.Setenv("SNOWFLAKE_ZK_TLS_KEY_FILE", "")
	out.Reset()
	errb.Reset()
	if rc := runSlots([]string{"--zk", zs.TLSAddr(), "--zk-root", "/tls", "--timeout", "3s"}, &out, &errb); rc != exitFailure {
		t.Fatalf("slots without a client certificate: rc %d out %q err %q; want 1", rc, out.String(), errb.String())
	}
	out.Reset()
	errb.Reset()
	if rc := runSlots([]string{"--zk", zs.TLSAddr(), "--zk-tls-cert-file", certs.ClientCertFile, "--zk-tls-key-file", certs.OtherClientKeyFile}, &out, &errb); rc != exitUsage ||
		!strings.Contains(errb.String(), "--zk-tls-cert-file \""+certs.ClientCertFile+"\" and key") {
		t.Fatalf("mismatched key: rc %d err %q; want a usage error naming --zk-tls-cert-file", rc, errb.String())
	}
}
