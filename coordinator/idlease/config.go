package idlease

import (
	"os"
	"path/filepath"

	"github.com/snowfleet/snowfleet/coordinator"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/snowflake/configerr"
)

// Config configures an embedded lease. It is the coordinator's Config
// (ZooKeeper servers, auth, TLS, the fleet's root, datacenter pinning, the
// lease timings, the clock-back policy) with the same defaults and the same
// Validate; only the lease node's kind is fixed: embedded.
type Config struct {
	// Config is the coordinator's configuration. Kind must be
	// zklayout.KindEmbedded or "" (made so by New); Program names this
	// program in the lease node ("" = the executable's base name);
	// Advertise must be empty: an embedded lease serves no ID requests.
	coordinator.Config
}

// DefaultConfig is coordinator.DefaultConfig for an embedded lease: kind
// embedded, the program named after the executable.
func DefaultConfig() Config {
	c := coordinator.DefaultConfig()
	c.Kind = zklayout.KindEmbedded
	c.Program = programName()
	return Config{Config: c}
}

// Validate names the first field that is out of range, as a
// *configerr.Error: the coordinator's checks, and Kind embedded.
func (c Config) Validate() error {
	if c.Kind != "" && c.Kind != zklayout.KindEmbedded {
		return &configerr.Error{Field: "Kind", Value: c.Kind,
			Reason: `must be "embedded" (or empty) for an embedded lease; a worker is snowflaked`}
	}
	return c.withDefaults().Config.Validate()
}

// withDefaults fills what New fills: the kind, and the program's name.
func (c Config) withDefaults() Config {
	c.Kind = zklayout.KindEmbedded
	if c.Program == "" {
		c.Program = programName()
	}
	return c
}

// programName is the executable's base name, cut to what a lease node
// takes.
func programName() string {
	name := filepath.Base(os.Args[0])
	if len(name) > 64 {
		name = name[:64]
	}
	return name
}
