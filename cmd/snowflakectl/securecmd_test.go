package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zkconn"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/integration/zktest"
)

// credFile writes user:password into a file only its owner may read.
func credFile(t *testing.T, name, auth string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(auth+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// init refuses to run without credentials unless --zk-insecure is given
// (#24 item 2), and with the operator's credentials it wants the workers'
// too (item 3); a worker file without an operator's is a mistake.
func TestInitNeedsCredentialsOrInsecure(t *testing.T) {
	t.Setenv("SNOWFLAKE_ZK_INSECURE", "")
	zs := zktest.Start(t)
	op := credFile(t, "op", "ops:op-pass-0123456789")
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "no ZooKeeper credentials: give --zk-auth-file (the operator's identity) and --zk-worker-auth-file (the workers'), or --zk-insecure"},
		{[]string{"--zk-auth-file", op}, "--zk-worker-auth-file is required with --zk-auth-file"},
		{[]string{"--zk-worker-auth-file", op}, "--zk-worker-auth-file without --zk-auth-file"},
	} {
		var out, errb bytes.Buffer
		rc := runInit(append([]string{"--zk", zs.Addr(), "--zk-root", "/gated"}, c.args...), &out, &errb)
		if rc != exitUsage || !strings.Contains(errb.String(), c.want) || strings.Count(errb.String(), "\n") != 1 {
			t.Errorf("init %q: rc %d, stderr %q; want 2 and one line saying %q", c.args, rc, errb.String(), c.want)
		}
	}
	obs, err := zkconn.Dial([]string{zs.Addr()}, "", 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer obs.Close()
	if ok, _, _ := obs.Exists("/gated"); ok {
		t.Fatal("a refused init made its root")
	}
	var out, errb bytes.Buffer
	if rc := runInit([]string{"--zk", zs.Addr(), "--zk-root", "/gated", "--zk-insecure", "--new-fleet"}, &out, &errb); rc != exitOK ||
		!strings.Contains(errb.String(), "world-writable") {
		t.Fatalf("init --zk-insecure: rc %d, stderr %q; want made, with a warning", rc, errb.String())
	}
}

// snowflakectl secure (#24 item 4): a fleet made without credentials is
// re-ACLed to the operator/worker/world scheme after a confirmation,
// saying what changed; run again it changes nothing; the world can then no
// longer write a slot node, and the workers' identity can.
func TestSecureCommand(t *testing.T) {
	zs := zktest.Start(t)
	root := "/to-secure"
	var out, errb bytes.Buffer
	if rc := runInit([]string{"--zk", zs.Addr(), "--zk-root", root, "--zk-insecure", "--new-fleet"}, &out, &errb); rc != exitOK {
		t.Fatalf("init --zk-insecure: rc %d, %s", rc, errb.String())
	}
	op, wk := credFile(t, "op", "ops:op-pass-0123456789"), credFile(t, "wk", "worker:wk-pass-0123456789")
	args := []string{"--zk", zs.Addr(), "--zk-root", root, "--zk-auth-file", op, "--zk-worker-auth-file", wk}
	out.Reset()
	errb.Reset()
	if rc := runSecure(args, input{r: strings.NewReader("n\n"), terminal: true}, &out, &errb); rc != exitFailure {
		t.Fatalf("secure answered no: rc %d, %s", rc, errb.String())
	}
	if rc := runSecure(args, input{r: strings.NewReader("")}, &out, &errb); rc != exitUsage {
		t.Fatalf("secure without a terminal nor --yes: rc %d", rc)
	}
	out.Reset()
	errb.Reset()
	if rc := runSecure(args, input{r: strings.NewReader("y\n"), terminal: true}, &out, &errb); rc != exitOK ||
		!strings.Contains(out.String(), root+": world:anyone:cdrwa -> digest:ops:") ||
		!strings.Contains(out.String(), "1030 node(s) changed") {
		t.Fatalf("secure: rc %d, stdout %q, stderr %q; want the root's change shown and 1,030 nodes changed (root, leases/, slots/, standby/, 1,024 slot nodes, the fleet registry and the root's entry)", rc, out.String(), errb.String())
	}
	out.Reset()
	if rc := runSecure(append(args, "--yes"), input{}, &out, &errb); rc != exitOK || !strings.Contains(out.String(), "0 node(s) changed, 0 made") {
		t.Fatalf("secure again: rc %d, %q; want nothing changed", rc, out.String())
	}
	slot := zklayout.SlotsPath(root) + "/dc00-m00"
	world, err := zkconn.Dial([]string{zs.Addr()}, "", 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer world.Close()
	if _, err := world.Set(slot, []byte(`{}`), -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("world set of a slot node after secure: %v, want ErrNoAuth", err)
	}
	worker, err := zkconn.Dial([]string{zs.Addr()}, "worker:wk-pass-0123456789", 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer worker.Close()
	data, _, err := worker.Get(slot)
	if err == nil {
		_, err = worker.Set(slot, data, -1)
	}
	if err != nil {
		t.Fatalf("the workers' identity cannot write a slot node after secure: %v", err)
	}
	// A lease node an older build made (the workers' identity with admin)
	// is brought over to world:anyone:r: secure authenticates as both.
	oldLease, err := worker.Create(zklayout.LeasesPath(root)+"/dc00-m01-", []byte(`{}`), zk.FlagEphemeral|zk.FlagSequence, tree.ACL("worker:wk-pass-0123456789"))
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errb.Reset()
	if rc := runSecure(append(args, "--yes"), input{}, &out, &errb); rc != exitOK || !strings.Contains(out.String(), "1 node(s) changed") {
		t.Fatalf("secure of a lease node made by an older build: rc %d, %q, %q; want it changed", rc, out.String(), errb.String())
	}
	if acl, _, err := world.GetACL(oldLease); err != nil || !tree.SameACL(acl, tree.WorkerNodeACL(true)) {
		t.Fatalf("ACL of %s after secure: %s, %v; want %s", oldLease, tree.FormatACL(acl), err, tree.FormatACL(tree.WorkerNodeACL(true)))
	}
	// repair given the operator's credentials only reads the workers'
	// identity from the tree: the slot node it makes is theirs to write.
	if err := world.Delete(slot, -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("world delete of a slot node: %v, want ErrNoAuth", err)
	}
	opConn, err := zkconn.Dial([]string{zs.Addr()}, "ops:op-pass-0123456789", 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer opConn.Close()
	if err := opConn.Delete(slot, -1); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errb.Reset()
	if rc := runRepair([]string{"--zk", zs.Addr(), "--zk-root", root, "--zk-auth-file", op, "--slot", "dc00-m00", "--yes"}, input{}, &out, &errb); rc != exitOK {
		t.Fatalf("repair: rc %d, %s", rc, errb.String())
	}
	if data, _, err = worker.Get(slot); err == nil {
		_, err = worker.Set(slot, data, -1)
	}
	if err != nil {
		t.Fatalf("the workers' identity cannot write the slot node repair made: %v", err)
	}
}

// snowflakectl fleets lists the registered fleets only (#36 item 1): a
// decoy root the world made, with a fleet's layout marker and owning every
// datacenter, is no fleet, with or without --zk-insecure, and the world
// cannot register it; a registry the world may write (made before the
// first init, with no credentials) proves nothing: exit 1 naming it,
// unless --zk-insecure.
func TestFleetsIgnoresUntrustedRoots(t *testing.T) {
	t.Setenv("SNOWFLAKE_ZK_INSECURE", "")
	zs := zktest.Start(t)
	op, wk := credFile(t, "op", "ops:op-pass-0123456789"), credFile(t, "wk", "worker:wk-pass-0123456789")
	var out, errb bytes.Buffer
	if rc := runInit([]string{"--zk", zs.Addr(), "--zk-root", "/real", "--datacenters", "0-3", "--new-fleet",
		"--zk-auth-file", op, "--zk-worker-auth-file", wk}, &out, &errb); rc != exitOK {
		t.Fatalf("init: rc %d, %s", rc, errb.String())
	}
	world, err := zkconn.Dial([]string{zs.Addr()}, "", 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer world.Close()
	decoy := `{"layout":"snowfleet/slots/v3","epoch_ms":1288834974657,"bits":"41/5/5/12","datacenters":"0-31"}`
	if _, err := world.Create("/decoy", []byte(decoy), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := world.Create(tree.RegistryNode("/decoy"), []byte(`{"root":"/decoy","datacenters":"0-31"}`), 0, zk.WorldACL(zk.PermAll)); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("the world registered a decoy: %v; want ErrNoAuth", err)
	}
	for _, args := range [][]string{{zs.Addr()}, {"--zk-insecure", zs.Addr()}} {
		out.Reset()
		errb.Reset()
		if rc := runFleets(args, &out, &errb); rc != exitOK || strings.Contains(out.String(), "/decoy") || !strings.Contains(out.String(), "1 fleet(s) in 1 ensemble(s); 0 overlap(s)") {
			t.Fatalf("fleets %q beside a decoy: rc %d, stdout %q, stderr %q; want 0, /real alone", args, rc, out.String(), errb.String())
		}
	}

	squatted := zktest.Start(t)
	sq, err := zkconn.Dial([]string{squatted.Addr()}, "", 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sq.Close()
	if err := tree.Register(sq, tree.FleetACL{}, "/made-up", tree.CurrentRootInfo(time.Now())); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errb.Reset()
	if rc := runFleets([]string{zs.Addr(), squatted.Addr()}, &out, &errb); rc != exitFailure ||
		!strings.Contains(errb.String(), "ensemble "+squatted.Addr()+": the ensemble's fleet registry is not protected") || strings.Contains(out.String(), "OVERLAP") {
		t.Fatalf("fleets over a world-writable registry: rc %d, stdout %q, stderr %q; want 1 naming it, no overlap counted", rc, out.String(), errb.String())
	}
	out.Reset()
	if rc := runFleets([]string{"--zk-insecure", zs.Addr(), squatted.Addr()}, &out, &errb); rc != exitFailure || !strings.Contains(out.String(), "OVERLAP") {
		t.Fatalf("fleets --zk-insecure over it: rc %d, %q; want 1 and the overlap with /made-up", rc, out.String())
	}
}
