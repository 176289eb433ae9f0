package fleettest

import (
	"context"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zkconn"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/integration/testenv"
	"github.com/snowfleet/snowfleet/snowflake/tlsfiles"
)

// InitFleet makes root on servers as `snowflakectl init --new-fleet` does
// (every datacenter, the default horizon bound, a 10 s skew bound), unless a root is there already
// (whatever it holds: the test may be about it). Workers never make their
// root, so a test starts its fleet with this.
func InitFleet(t testing.TB, servers []string, root, auth string, tls tlsfiles.Files) {
	testenv.TestOnly("fleettest")
	t.Helper()
	if root == "" {
		root = zklayout.DefaultRoot
	}
	// A test of a worker without a reachable ZooKeeper has no root to
	// make: say so and leave it to the test.
	conn, err := zkconn.DialTLS(servers, auth, tls, 5*time.Second, nil)
	if err != nil {
		t.Logf("fleettest: no root made at %s: %v", root, err)
		return
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	var exists bool
	go func() {
		var err error
		exists, _, err = conn.Exists(root)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Logf("fleettest: no root made at %s: %v", root, err)
			return
		}
	case <-time.After(5 * time.Second):
		t.Logf("fleettest: no root made at %s: ZooKeeper did not answer within 5s", root)
		return
	}
	if exists {
		return
	}
	cfg := tree.DefaultInitConfig()
	cfg.Root, cfg.NewFleet = root, true
	cfg.ACL, _ = tree.NewFleetACL(auth, auth)
	// A wider skew bound than the default: a new fleet does not pay for
	// it, and tests run workers with a --max-skew of a few seconds.
	cfg.MaxSkew = 10 * time.Second
	if _, err := tree.InitRoot(ctx, conn, cfg); err != nil {
		t.Fatalf("init %s: %v", root, err)
	}
}
