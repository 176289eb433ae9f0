package coordinator

import (
	"os"
	"strings"
	"time"
	"unicode"

	"github.com/snowfleet/snowfleet/snowflake"
)

// What holds a lease, as its lease node says (Config.Kind, LeaseInfo.Kind).
const (
	// KindWorker is a snowflaked worker: it serves IDs at its lease node's
	// addr. A lease node without a kind (written before kinds) is one.
	KindWorker = "worker"
	// KindEmbedded is a Go program issuing IDs to itself from its own lease
	// (package coordinator/idlease): it serves nobody, so client discovery
	// and balancer configs leave it out.
	KindEmbedded = "embedded"
)

// maxProgram bounds Config.Program: a name, not a document.
const maxProgram = 128

// leaseKind is the kind a lease node publishes or was read with: "" is
// KindWorker, the only kind before kinds were written.
func leaseKind(k string) string {
	if k == "" {
		return KindWorker
	}
	return k
}

func (c Config) validateKind() error {
	bad := func(field string, value any, reason string) error {
		return &snowflake.ConfigError{Field: field, Value: value, Reason: reason}
	}
	switch leaseKind(c.Kind) {
	case KindWorker:
	case KindEmbedded:
		if c.Advertise != "" {
			// Discovery skips embedded leases; an address would say the
			// opposite to anyone reading the node.
			return bad("Advertise", c.Advertise, "must be empty with Kind embedded: an embedded lease serves no ID requests")
		}
	default:
		return bad("Kind", c.Kind, `is neither "worker" nor "embedded"`)
	}
	if len(c.Program) > maxProgram || strings.ContainsFunc(c.Program, unicode.IsControl) {
		return bad("Program", c.Program, "must be at most 128 bytes without control characters")
	}
	return nil
}

// leaseData is what our lease and standby nodes say about us.
func (c *Coordinator) leaseData(now time.Time) leaseData {
	return leaseData{Addr: c.cfg.Advertise, HTTP: c.cfg.HTTPAdvertise, Host: hostname(),
		PID: os.Getpid(), Version: c.cfg.Version, Since: now.UTC(),
		Kind: leaseKind(c.cfg.Kind), Program: c.cfg.Program}
}
