// Package zkconn opens ZooKeeper sessions the way every part of snowfleet
// does: the servers as given, TLS to the secureClientPort with certificate
// files (snowflake/tlsfiles) reloaded on each dial, digest credentials
// (Dial, DialTLS, AddAuth), go-zookeeper's log at debug level, parallel
// reads on one session (ForEach), and a call bounded by a ctx (Call). It
// knows nothing of the znode layout (coordinator/zklayout) nor of the lease
// protocol (coordinator), so the public client (worker/client) dials with
// it without compiling either.
//
// The files: dial.go (Dial, DialTLS, Connect, the credentials parsed and
// redacted), tls.go (the TLS files checked), authfile.go (ReadAuthFile:
// the credentials file), call.go (Call and CallResult: a call bounded by
// a ctx), parallel.go (ForEach: reads in parallel on one session).
package zkconn
