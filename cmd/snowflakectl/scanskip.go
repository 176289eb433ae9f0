package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/snowfleet/snowfleet/coordinator/tree"
)

// scanSkipFlag is --zk-scan-skip, with --scan-limit, on the commands that
// once walked an ensemble for fleets (init, fleets, repair of a root).
// Deprecated: fleets are registered, not searched for; both are accepted
// (and still checked) so that scripts naming them run, and ignored with a
// warning.
type scanSkipFlag struct {
	paths []string
	limit int
}

type skipPaths []string

func (f *skipPaths) String() string { return strings.Join(*f, ",") }

func (f *skipPaths) Set(s string) error {
	for _, item := range strings.Split(s, ",") {
		*f = append(*f, strings.TrimSpace(item))
	}
	return nil
}

// register adds --zk-scan-skip and --scan-limit to fs.
func (f *scanSkipFlag) register(fs *flag.FlagSet) {
	fs.Var((*skipPaths)(&f.paths), "zk-scan-skip", "ignored (deprecated): fleets are registered in "+tree.RegistryPath+", not searched for")
	fs.IntVar(&f.limit, "scan-limit", 0, "ignored (deprecated): fleets are registered in "+tree.RegistryPath+", not searched for")
}

// check refuses a value that was never valid, and warns that the flags
// are ignored.
func (f *scanSkipFlag) check(c *ctl, cmd string) error {
	for _, p := range f.paths {
		if !tree.ValidSkipPath(p) {
			return fmt.Errorf("--zk-scan-skip %q must be an absolute, clean znode path such as /apps/private (not /, no trailing /)", p)
		}
	}
	if f.limit < 0 {
		return fmt.Errorf("--scan-limit %d must not be negative", f.limit)
	}
	if len(f.paths) > 0 || f.limit > 0 {
		c.warnf(cmd, "--zk-scan-skip and --scan-limit are ignored: fleets are registered in %s, not searched for", tree.RegistryPath)
	}
	return nil
}
