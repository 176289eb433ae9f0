// Package tlsfiles names the PEM files of one end of a TLS connection, loads
// them, and stamps them so that a reload notices a rotated file. Both ends
// snowfleet speaks use it: the client end towards ZooKeeper's
// secureClientPort (coordinator/zkconn) and the server end of the ID port
// (worker), so the files are named, read and checked for change in one place.
package tlsfiles

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"github.com/snowfleet/snowfleet/snowflake/configerr"
)

// Files names the PEM files of one end of a TLS connection.
type Files struct {
	// CertFile and KeyFile are this end's certificate (chain) and its key;
	// both or neither.
	CertFile, KeyFile string
	// CACertFile holds the CA certificates the other end's certificate is
	// checked against: for a client the servers', for a server the
	// clients'.
	CACertFile string
}

// Enabled: any file is named.
func (f Files) Enabled() bool { return f.CertFile != "" || f.KeyFile != "" || f.CACertFile != "" }

// Stamp is the files' mtimes and sizes ("" names skipped, a missing file
// named as such): two stamps differ once any file changed, which is what a
// reload looks for.
func (f Files) Stamp() string {
	s := ""
	for _, p := range []string{f.CertFile, f.KeyFile, f.CACertFile} {
		if p == "" {
			continue
		}
		if st, err := os.Stat(p); err == nil {
			s += fmt.Sprintf("%s:%d:%d;", p, st.ModTime().UnixNano(), st.Size())
		} else {
			s += p + ":missing;"
		}
	}
	return s
}

// Load reads the files: the certificate and key (nil without them) and the
// CA pool (nil without CACertFile). An error is a *configerr.Error whose
// Field is the file's field (CertFile, KeyFile, CACertFile) and whose Err
// is the cause, if any.
func (f Files) Load() (*tls.Certificate, *x509.CertPool, error) {
	bad := func(field, value, reason string, err error) error {
		ce := &configerr.Error{Field: field, Reason: reason, Err: err}
		if value != "" {
			ce.Value = value
		}
		return ce
	}
	switch {
	case f.CertFile == "" && f.KeyFile != "":
		return nil, nil, bad("CertFile", "", "is empty but the key file is set: the certificate and key go together", nil)
	case f.CertFile != "" && f.KeyFile == "":
		return nil, nil, bad("KeyFile", "", "is empty but the certificate file is set: the certificate and key go together", nil)
	}
	var cert *tls.Certificate
	if f.CertFile != "" {
		for _, file := range []struct{ field, path string }{{"CertFile", f.CertFile}, {"KeyFile", f.KeyFile}} {
			if _, err := os.ReadFile(file.path); err != nil {
				return nil, nil, bad(file.field, file.path, "cannot be read", err)
			}
		}
		c, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
		if err != nil {
			return nil, nil, bad("CertFile", f.CertFile, "and key "+f.KeyFile+" are not a certificate and its key", err)
		}
		cert = &c
	}
	var pool *x509.CertPool
	if f.CACertFile != "" {
		pem, err := os.ReadFile(f.CACertFile)
		if err != nil {
			return nil, nil, bad("CACertFile", f.CACertFile, "cannot be read", err)
		}
		pool = x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, nil, bad("CACertFile", f.CACertFile, "holds no PEM certificate", nil)
		}
	}
	return cert, pool, nil
}
