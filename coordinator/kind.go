package coordinator

import (
	"os"
	"strings"
	"time"
	"unicode"

	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/snowflake/configerr"
)

// maxProgram bounds Config.Program: a name, not a document.
const maxProgram = 128

func (c Config) validateKind() error {
	bad := func(field string, value any, reason string) error {
		return &configerr.Error{Field: field, Value: value, Reason: reason}
	}
	switch zklayout.LeaseKind(c.Kind) {
	case zklayout.KindWorker:
	case zklayout.KindEmbedded:
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
func (c *Coordinator) leaseData(now time.Time) zklayout.LeaseData {
	return zklayout.LeaseData{Addr: c.cfg.Advertise, HTTP: c.cfg.HTTPAdvertise, Host: hostname(),
		PID: os.Getpid(), Version: c.cfg.Version, Since: now.UTC(),
		Kind: zklayout.LeaseKind(c.cfg.Kind), Program: c.cfg.Program}
}
