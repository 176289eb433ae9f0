package main

import (
	"flag"

	"github.com/snowfleet/snowfleet/coordinator/zkconn"
	"github.com/snowfleet/snowfleet/snowflake/tlsfiles"
)

// zkTLSFlags are snowflaked's --zk-tls-* flags, for an ensemble that
// serves its secureClientPort only; each reads the environment variable
// snowflaked reads for it (envFlags).
type zkTLSFlags struct{ files tlsfiles.Files }

// zkTLSFlagName is the flag of a tlsfiles.Files field.
func zkTLSFlagName(field string) string {
	switch field {
	case "CertFile":
		return "zk-tls-cert-file"
	case "KeyFile":
		return "zk-tls-key-file"
	}
	return "zk-tls-ca-cert-file"
}

func (z *zkTLSFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&z.files.CertFile, "zk-tls-cert-file", "",
		"PEM client certificate `file` for ZooKeeper's secureClientPort (env SNOWFLAKE_ZK_TLS_CERT_FILE); any --zk-tls-* turns TLS to ZooKeeper on")
	fs.StringVar(&z.files.KeyFile, "zk-tls-key-file", "",
		"PEM key `file` of --zk-tls-cert-file (env SNOWFLAKE_ZK_TLS_KEY_FILE)")
	fs.StringVar(&z.files.CACertFile, "zk-tls-ca-cert-file", "",
		"PEM CA `file` the ZooKeeper servers' certificates are checked against (env SNOWFLAKE_ZK_TLS_CA_CERT_FILE; default: the system's)")
}

// check loads the files; an error names the flag.
func (z *zkTLSFlags) check() error {
	if !z.files.Enabled() {
		return nil
	}
	return flagError(zkconn.ValidateTLS(z.files, ""), zkTLSFlagName)
}
