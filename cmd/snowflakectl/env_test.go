package main

import (
	"strings"
	"testing"
)

// The environment sets the ZooKeeper flags only, by snowflaked's rule: a
// worker's SNOWFLAKE_DATACENTER does not give encode a --datacenter, its
// SNOWFLAKE_ZK is no --zk beside --addr, and a value that does not parse
// is one line naming flag, variable and value (exit 2).
func TestEnvironmentSetsTheZooKeeperFlagsOnly(t *testing.T) {
	t.Setenv("SNOWFLAKE_DATACENTER", "7")
	if _, errs, rc := runCtl(t, "", "encode", "--unix-ms", "1700000000000", "--machine", "1"); rc != exitUsage || !strings.Contains(errs, "--datacenter is required") {
		t.Errorf("encode with SNOWFLAKE_DATACENTER set: rc %d %q; want 2, --datacenter required", rc, errs)
	}
	t.Setenv("SNOWFLAKE_ZK", "127.0.0.1:1")
	if _, errs, rc := runCtl(t, "", "next", "--addr", "127.0.0.1:1", "--timeout", "100ms"); rc != exitFailure || strings.Contains(errs, "not both") {
		t.Errorf("next --addr with SNOWFLAKE_ZK set: rc %d %q; want 1 (nothing answers), not a usage error", rc, errs)
	}
	t.Setenv("SNOWFLAKE_ZK_INSECURE", "yes")
	_, errs, rc := runCtl(t, "", "init", "--zk-root", "/env")
	if want := `snowflakectl init: invalid value "yes" for flag --zk-insecure (from environment variable SNOWFLAKE_ZK_INSECURE)`; rc != exitUsage || !strings.HasPrefix(errs, want) {
		t.Errorf("init with SNOWFLAKE_ZK_INSECURE=yes: rc %d %q; want 2 and %q", rc, errs, want)
	}
	t.Setenv("SNOWFLAKE_ZK_INSECURE", "true")
	t.Setenv("SNOWFLAKE_ZK_ROOT", "relative")
	if _, errs, rc := runCtl(t, "", "slots"); rc != exitUsage || !strings.Contains(errs, `--zk-root "relative"`) {
		t.Errorf("slots with SNOWFLAKE_ZK_ROOT=relative: rc %d %q; want 2 naming --zk-root", rc, errs)
	}
}
