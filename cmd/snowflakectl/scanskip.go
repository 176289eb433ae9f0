package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/snowfleet/snowfleet/coordinator/tree"
)

// scanSkipFlag is --zk-scan-skip, on every command that scans an ensemble
// for fleets (init, fleets, repair of a root): a subtree the scan does not enter. Repeatable;
// a comma-separated value adds each item.
type scanSkipFlag []string

func (f *scanSkipFlag) String() string { return strings.Join(*f, ",") }

func (f *scanSkipFlag) Set(s string) error {
	for _, item := range strings.Split(s, ",") {
		*f = append(*f, strings.TrimSpace(item))
	}
	return nil
}

// register adds --zk-scan-skip to fs.
func (f *scanSkipFlag) register(fs *flag.FlagSet) {
	fs.Var(f, "zk-scan-skip", "a subtree (absolute znode `path`) the scan for fleets does not enter, for one whose ACL refuses us and that holds no fleet; repeatable, or comma-separated")
}

// check refuses a path that is not an absolute, clean znode path.
func (f *scanSkipFlag) check() error {
	for _, p := range *f {
		if !tree.ValidSkipPath(p) {
			return fmt.Errorf("--zk-scan-skip %q must be an absolute, clean znode path such as /apps/private (not /, no trailing /)", p)
		}
	}
	return nil
}
