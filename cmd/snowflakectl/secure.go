package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/snowfleet/snowfleet/snowflake/secretfile"
	"github.com/snowfleet/snowfleet/worker/client"
)

// secFlags are how next and bench reach workers that ask for a password
// (--requirepass-file) or listen with TLS (--tls-listen), named as
// redis-cli names them where it has the same.
type secFlags struct {
	passwordFile              string
	tls                       bool
	caFile, certFile, keyFile string
	serverName                string
}

func (s *secFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&s.passwordFile, "password-file", "",
		"`file` whose first line is the password to AUTH with (env SNOWFLAKE_PASSWORD_FILE); not accessible to others")
	fs.BoolVar(&s.tls, "tls", false, "connect with TLS (the workers' --tls-listen port)")
	fs.StringVar(&s.caFile, "tls-ca-cert-file", "", "PEM `file` of the CA that signs the workers' certificates (default: the system's)")
	fs.StringVar(&s.certFile, "tls-cert-file", "", "PEM `file` of a client certificate, for workers with --tls-auth-clients")
	fs.StringVar(&s.keyFile, "tls-key-file", "", "PEM `file` of the client certificate's key")
	fs.StringVar(&s.serverName, "tls-server-name", "", "the `name` the workers' certificate must hold (default: the host of each address)")
}

// options reads the files the flags name; an error names the flag.
func (s *secFlags) options() (client.DialOptions, error) {
	var o client.DialOptions
	if s.passwordFile != "" {
		pws, err := secretfile.ReadPasswords(s.passwordFile)
		if err != nil {
			return o, fmt.Errorf("--password-file %q: %w", s.passwordFile, err)
		}
		o.Password = string(pws[0])
	}
	if !s.tls {
		if s.caFile != "" || s.certFile != "" || s.keyFile != "" || s.serverName != "" {
			return o, errors.New("--tls-* flags without --tls")
		}
		return o, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: s.serverName}
	if s.caFile != "" {
		pem, err := os.ReadFile(s.caFile)
		if err != nil {
			return o, fmt.Errorf("--tls-ca-cert-file: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return o, fmt.Errorf("--tls-ca-cert-file %q holds no PEM certificate", s.caFile)
		}
	}
	if (s.certFile == "") != (s.keyFile == "") {
		return o, errors.New("--tls-cert-file and --tls-key-file go together")
	}
	if s.certFile != "" {
		cert, err := tls.LoadX509KeyPair(s.certFile, s.keyFile)
		if err != nil {
			return o, fmt.Errorf("--tls-cert-file %q / --tls-key-file %q: %w", s.certFile, s.keyFile, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	o.TLS = cfg
	return o, nil
}
