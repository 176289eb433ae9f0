package zktest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/integration/testenv"
)

// Certs are PEM files of a test CA and of a server and a client certificate
// it signed, for ZooKeeper's secureClientPort and its clients. Keys are
// PKCS#8 ECDSA P-256, which ZooKeeper's PEM key store reads.
type Certs struct {
	// Dir holds the files.
	Dir string
	// CAFile is the CA certificate: the trust store of both sides.
	CAFile string
	// ServerFile holds the server's key and certificate, ZooKeeper's
	// ssl.keyStore.location with ssl.keyStore.type=PEM.
	ServerFile string
	// ClientCertFile and ClientKeyFile are a client certificate and key
	// (--zk-tls-cert-file, --zk-tls-key-file).
	ClientCertFile, ClientKeyFile string
	// OtherCAFile is a CA that signed nothing here: a client trusting it
	// refuses the server; OtherClientCertFile and OtherClientKeyFile are a
	// client certificate it signed, which the server refuses.
	OtherCAFile, OtherClientCertFile, OtherClientKeyFile string
}

// NewCerts makes a CA, a server certificate valid for 127.0.0.1, localhost
// and hosts (DNS names or IPs), a client certificate (valid for the same
// names: ZooKeeper checks a client's certificate against its address unless
// ssl.hostnameVerification=false), and a second CA with a client of its
// own, in a temporary directory of the test.
func NewCerts(t testing.TB, hosts ...string) *Certs {
	t.Helper()
	c, err := WriteCerts(t.TempDir(), hosts...)
	if err != nil {
		t.Fatalf("zktest: certificates: %v", err)
	}
	return c
}

// WriteCerts is NewCerts into dir, for callers without a testing.TB.
func WriteCerts(dir string, hosts ...string) (*Certs, error) {
	testenv.TestOnly("zktest")
	c := &Certs{Dir: dir,
		CAFile:              filepath.Join(dir, "ca.pem"),
		ServerFile:          filepath.Join(dir, "server.pem"),
		ClientCertFile:      filepath.Join(dir, "client.pem"),
		ClientKeyFile:       filepath.Join(dir, "client-key.pem"),
		OtherCAFile:         filepath.Join(dir, "other-ca.pem"),
		OtherClientCertFile: filepath.Join(dir, "other-client.pem"),
		OtherClientKeyFile:  filepath.Join(dir, "other-client-key.pem"),
	}
	names := append([]string{"127.0.0.1", "localhost"}, hosts...)
	ca, err := newCA("zktest CA")
	if err != nil {
		return nil, err
	}
	other, err := newCA("zktest other CA")
	if err != nil {
		return nil, err
	}
	srvCert, srvKey, err := ca.sign("zookeeper", names)
	if err != nil {
		return nil, err
	}
	cliCert, cliKey, err := ca.sign("client", names)
	if err != nil {
		return nil, err
	}
	oCert, oKey, err := other.sign("client", names)
	if err != nil {
		return nil, err
	}
	files := []struct {
		path   string
		blocks [][2]any
	}{
		{c.CAFile, [][2]any{{"CERTIFICATE", ca.der}}},
		{c.ServerFile, [][2]any{{"PRIVATE KEY", srvKey}, {"CERTIFICATE", srvCert}}},
		{c.ClientCertFile, [][2]any{{"CERTIFICATE", cliCert}}},
		{c.ClientKeyFile, [][2]any{{"PRIVATE KEY", cliKey}}},
		{c.OtherCAFile, [][2]any{{"CERTIFICATE", other.der}}},
		{c.OtherClientCertFile, [][2]any{{"CERTIFICATE", oCert}}},
		{c.OtherClientKeyFile, [][2]any{{"PRIVATE KEY", oKey}}},
	}
	for _, f := range files {
		var out []byte
		for _, b := range f.blocks {
			out = append(out, pem.EncodeToMemory(&pem.Block{Type: b[0].(string), Bytes: b[1].([]byte)})...)
		}
		// 0644: the files are read by a ZooKeeper in a container running
		// as another user; they are throwaway test keys.
		if err := os.WriteFile(f.path, out, 0o644); err != nil {
			return nil, err
		}
	}
	return c, nil
}

type testCA struct {
	cert *x509.Certificate
	der  []byte
	key  *ecdsa.PrivateKey
}

func newCA(name string) (*testCA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("make CA: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &testCA{cert: cert, der: der, key: key}, nil
}

// sign makes a certificate for both server and client use, valid for names.
func (ca *testCA) sign(cn string, names []string) (certDER, keyDER []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	certDER, err = x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, nil, fmt.Errorf("sign %s: %w", cn, err)
	}
	keyDER, err = x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return certDER, keyDER, nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return n
}

// handshake completes one TLS handshake with the client certificate on
// addr within d: the JVM's first
// handshakes are slow (seconds on a busy machine), and a test's client
// should not pay for them.
func (c *Certs) handshake(addr string, d time.Duration) error {
	pemCA, err := os.ReadFile(c.CAFile)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pemCA)
	cert, err := tls.LoadX509KeyPair(c.ClientCertFile, c.ClientKeyFile)
	if err != nil {
		return err
	}
	var last error
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Until(end)}, "tcp", addr,
			&tls.Config{RootCAs: pool, ServerName: "127.0.0.1", Certificates: []tls.Certificate{cert}})
		if err != nil {
			last = err
			continue
		}
		conn.Close()
		return nil
	}
	return fmt.Errorf("within %v: %w", d, last)
}
