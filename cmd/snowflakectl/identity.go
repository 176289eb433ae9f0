package main

import (
	"errors"
	"flag"
	"fmt"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zkconn"
)

// identityFlags are the operator commands' second identity and, for init,
// the opt-out of credentials. The operator's identity is --zk-auth-file
// (zkFlags); --zk-worker-auth-file names the workers' (only its digest id
// goes into the ACLs: see tree.FleetACL).
type identityFlags struct {
	workerFile string
	insecure   bool
	// worker is the workers' credentials, once scheme has read them.
	worker string
}

// register binds --zk-worker-auth-file, and --zk-insecure when
// withInsecure.
func (f *identityFlags) register(fs *flag.FlagSet, withInsecure bool) {
	fs.StringVar(&f.workerFile, "zk-worker-auth-file", "",
		"`file` holding the workers' ZooKeeper digest credentials, one line user:password, not accessible to others (env SNOWFLAKE_ZK_WORKER_AUTH_FILE): they get create/delete in leases/ and standby/ and read/write on the slot nodes, nothing more")
	if withInsecure {
		f.registerInsecure(fs, "make the tree without credentials, world-writable: anyone reaching ZooKeeper can then cause duplicate IDs (env SNOWFLAKE_ZK_INSECURE; without it, no credentials is refused)")
	}
}

// registerInsecure binds --zk-insecure (env SNOWFLAKE_ZK_INSECURE, a
// boolean as snowflaked reads it: true, 1, false, 0...).
func (f *identityFlags) registerInsecure(fs *flag.FlagSet, usage string) {
	fs.BoolVar(&f.insecure, "zk-insecure", false, usage)
}

// errNoCredentials: init without credentials and without --zk-insecure.
var errNoCredentials = errors.New("no ZooKeeper credentials: give --zk-auth-file (the operator's identity) and --zk-worker-auth-file (the workers'), or --zk-insecure to make a world-writable tree (anyone reaching ZooKeeper can then cause duplicate IDs)")

// scheme is the fleet's ACL scheme for the operator's credentials auth
// (from zkFlags) and the workers' file; required says both are needed
// (init, secure) rather than the workers' being read from the tree.
func (f *identityFlags) scheme(auth string, required bool) (tree.FleetACL, bool, error) {
	if auth == "" {
		if f.workerFile != "" {
			return tree.FleetACL{}, false, errors.New("--zk-worker-auth-file without --zk-auth-file: the operator's identity owns the tree")
		}
		if required && !f.insecure {
			return tree.FleetACL{}, false, errNoCredentials
		}
		return tree.FleetACL{}, false, nil
	}
	if f.workerFile == "" {
		if required {
			return tree.FleetACL{}, false, errors.New("--zk-worker-auth-file is required with --zk-auth-file: the workers get their own identity, with only what a worker does (give the operator's file to both for a single identity)")
		}
		return tree.FleetACL{}, false, nil // read from the tree
	}
	worker, err := zkconn.ReadAuthFile(f.workerFile)
	if err != nil {
		return tree.FleetACL{}, false, fmt.Errorf("--zk-worker-auth-file %q: %w", f.workerFile, err)
	}
	s, err := tree.NewFleetACL(auth, worker)
	if err == nil {
		f.worker = worker
	}
	return s, err == nil, err
}

// treeWriter is the preamble of the commands that write the fleet's tree
// (init, repair, recover): no arguments, the ZooKeeper flags checked, and
// the identities read into the ACL scheme the tree gets (needWorker: with
// credentials, the workers' identity is required too).
func (c *ctl) treeWriter(args []string, needWorker bool) (servers []string, scheme tree.FleetACL, given bool, err error) {
	if err := noArgs(args); err != nil {
		return nil, tree.FleetACL{}, false, err
	}
	if servers, err = c.zk.check(); err != nil {
		return nil, tree.FleetACL{}, false, usage(err)
	}
	if scheme, given, err = c.ids.scheme(c.zk.auth, needWorker); err != nil {
		return nil, tree.FleetACL{}, false, usage(err)
	}
	return servers, scheme, given, nil
}
