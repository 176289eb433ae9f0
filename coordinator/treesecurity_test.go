package coordinator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zkconn"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/snowflake"
)

const (
	testOperator = "ops:operator-s3cret"
	testWorker   = "worker:worker-s3cret"
)

// secureScheme is the two-identity scheme of the tests.
func secureScheme(t testing.TB) tree.FleetACL {
	t.Helper()
	s, err := tree.NewFleetACL(testOperator, testWorker)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// dialAs is a session with credentials auth ("" for the world).
func dialAs(t testing.TB, addr, auth string) *zk.Conn {
	t.Helper()
	conn, err := zkconn.Dial([]string{addr}, auth, 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn
}

// initSecure makes root as snowflakectl init with both identities does.
func initSecure(t testing.TB, addr, root string) {
	t.Helper()
	ic := tree.DefaultInitConfig()
	ic.Root, ic.ACL, ic.NewFleet = root, secureScheme(t), true
	ic.MaxHorizon, ic.MaxSkew = tree.DefaultMaxHorizon, 24*time.Hour
	if _, err := tree.InitRoot(context.Background(), dialAs(t, addr, testOperator), ic); err != nil {
		t.Fatalf("init %s: %v", root, err)
	}
}

// secureConfig is a worker with the workers' identity (not insecure).
func secureConfig(addr, root string) Config {
	cfg := testConfig(addr)
	cfg.Root, cfg.Auth, cfg.Insecure = root, testWorker, false
	return cfg
}

// Least privilege (#24 item 3): with the operator's and the workers'
// identities, the world may only read; the workers' identity writes slot
// nodes and makes and deletes its own lease nodes, and nothing more; the
// operator owns the rest.
func TestLeastPrivilegeACLs(t *testing.T) {
	zs := startZK(t)
	root := "/lp"
	initSecure(t, zs.Addr(), root)
	w := startWorker(t, "w", secureConfig(zs.Addr(), root), newRecorder())
	w.waitReady(15 * time.Second)
	st := w.c.Status()
	world, wk, op := dialAs(t, zs.Addr(), ""), dialAs(t, zs.Addr(), testWorker), dialAs(t, zs.Addr(), testOperator)
	sl := zklayout.SlotPath(root, mustSlot(t, st.Slot))
	lease := zklayout.LeasesPath(root) + "/" + st.LeaseNode

	refused := func(who, what string, err error) {
		t.Helper()
		if !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("%s %s: %v, want ErrNoAuth", who, what, err)
		}
	}
	// The world: reads everything, writes nothing.
	if _, err := tree.ReadSlotMap(world, root); err != nil {
		t.Errorf("the world cannot read the slot map: %v", err)
	}
	_, err := world.Set(sl, []byte(`{"reserved_until_ms":1}`), -1)
	refused("world", "set of a slot node", err)
	refused("world", "delete of a lease node", world.Delete(lease, -1))
	_, err = world.Create(zklayout.LeasesPath(root)+"/dc00-m00-0000000001", []byte(`{"addr":"rogue:6379"}`), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	refused("world", "create of a fake lease node", err)
	_, err = world.Create(tree.StandbyPath(root)+"/x", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	refused("world", "create in standby/", err)
	_, err = world.Set(lease, []byte(`{"addr":"rogue:6379"}`), -1)
	refused("world", "set of a lease node", err)

	// The workers' identity: what a worker does, nothing more.
	refused("worker", "delete of slots/", wk.Delete(zklayout.SlotsPath(root), -1))
	refused("worker", "delete of a slot node", wk.Delete(sl, -1))
	_, err = wk.Create(zklayout.SlotsPath(root)+"/dc31-m99", []byte(`{}`), 0, zk.WorldACL(zk.PermAll))
	refused("worker", "create of a slot node", err)
	_, err = wk.Set(root, []byte(`{}`), -1)
	refused("worker", "set of the root", err)
	_, err = wk.SetACL(sl, zk.WorldACL(zk.PermAll), -1)
	refused("worker", "set ACL of a slot node", err)
	_, err = wk.Create(root+"/extra", nil, 0, zk.WorldACL(zk.PermAll))
	refused("worker", "create under the root", err)
	p, err := wk.Create(zklayout.LeasesPath(root)+"/probe-", nil, zk.FlagEphemeral|zk.FlagSequence, tree.ACL(testWorker))
	if err != nil {
		t.Errorf("worker create in leases/: %v", err)
	} else if err := wk.Delete(p, -1); err != nil {
		t.Errorf("worker delete of its node in leases/: %v", err)
	}

	// Each node's ACL is the scheme's.
	scheme := secureScheme(t)
	for _, c := range []struct {
		path string
		want []zk.ACL
	}{{root, scheme.Root()}, {zklayout.LeasesPath(root), scheme.Parent()}, {zklayout.SlotsPath(root), scheme.Root()},
		{tree.StandbyPath(root), scheme.Parent()}, {sl, scheme.Slot()}, {lease, tree.WorkerNodeACL(true)}} {
		have, _, err := op.GetACL(c.path)
		if err != nil || !tree.SameACL(have, c.want) {
			t.Errorf("ACL of %s: %s (%v), want %s", c.path, tree.FormatACL(have), err, tree.FormatACL(c.want))
		}
	}
	// The operator owns the tree.
	if _, err := op.SetACL(sl, scheme.Slot(), -1); err != nil {
		t.Errorf("operator set ACL of a slot node: %v", err)
	}
}

func mustSlot(t testing.TB, s string) snowflake.Slot {
	t.Helper()
	sl, err := snowflake.ParseSlot(s)
	if err != nil {
		t.Fatal(err)
	}
	return sl
}

// Trust is checked (#24 item 4): a worker with credentials refuses a tree
// the world may write (made without credentials), naming snowflakectl
// secure; SecureTree puts it right, says what it changed, changes nothing
// the second time, and the worker then serves.
func TestWorkerRefusesWorldWritableTree(t *testing.T) {
	zs := startZK(t)
	root := "/open"
	insecure := testConfig(zs.Addr())
	insecure.Root = root
	initFleet(t, insecure) // world cdrwa, as --zk-insecure makes it
	cfg := secureConfig(zs.Addr(), root)
	err, c := runUntilErr(t, cfg)
	if !errors.Is(err, tree.ErrUntrustedTree) || !strings.Contains(err.Error(), "snowflakectl secure") ||
		!strings.Contains(err.Error(), "the world may write it") || c.Status().Claims != 0 {
		t.Fatalf("worker with credentials on a world-writable tree: %v (claims %d); want ErrUntrustedTree naming snowflakectl secure, nothing claimed",
			err, c.Status().Claims)
	}

	op := dialAs(t, zs.Addr(), testOperator)
	res, err := tree.SecureTree(context.Background(), op, root, secureScheme(t))
	if err != nil || len(res.Changed) < 4+1024 {
		t.Fatalf("secure: %d changed, made %v, %v; want the root, leases/, slots/, standby/ and 1,024 slot nodes", len(res.Changed), res.Made, err)
	}
	again, err := tree.SecureTree(context.Background(), op, root, secureScheme(t))
	if err != nil || len(again.Changed) != 0 || len(again.Made) != 0 || again.Checked < 4+1024 {
		t.Fatalf("secure again: %+v, %v; want nothing changed", again, err)
	}
	w := startWorker(t, "w", cfg, newRecorder())
	w.waitReady(15 * time.Second)
	world := dialAs(t, zs.Addr(), "")
	if _, err := world.Set(zklayout.SlotPath(root, mustSlot(t, w.c.Status().Slot)), []byte(`{}`), -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("world set of a slot node after secure: %v, want ErrNoAuth", err)
	}

	// An identity the tree does not grant what a worker needs is refused too.
	stranger := cfg
	stranger.Auth = "stranger:pw"
	if err, _ := runUntilErr(t, stranger); !errors.Is(err, tree.ErrUntrustedTree) || !strings.Contains(err.Error(), "lacks") ||
		!strings.Contains(err.Error(), "--zk-worker-auth-file") || strings.Contains(err.Error(), "run snowflakectl secure --zk-auth-file") {
		t.Fatalf("worker whose identity the tree does not grant: %v; want ErrUntrustedTree saying what it lacks and which identity to give, not to secure a protected tree", err)
	}
}

// init never adopts a node it did not make with the fleet's ACL (#24 item
// 4): an empty root an attacker made first, world-writable or with their
// own identity, is refused, and nothing is written into it.
func TestInitRefusesForeignRoot(t *testing.T) {
	zs := startZK(t)
	world := dialAs(t, zs.Addr(), "")
	attacker := dialAs(t, zs.Addr(), "mallory:pw")
	if _, err := world.Create("/squat", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := attacker.Create("/owned", nil, 0, tree.ACL("mallory:pw")); err != nil {
		t.Fatal(err)
	}
	op := dialAs(t, zs.Addr(), testOperator)
	for _, root := range []string{"/squat", "/owned"} {
		ic := tree.DefaultInitConfig()
		ic.Root, ic.ACL, ic.NewFleet = root, secureScheme(t), true
		_, err := tree.InitRoot(context.Background(), op, ic)
		if !errors.Is(err, tree.ErrForeignNode) || !strings.Contains(err.Error(), root) {
			t.Errorf("init over %s made by another: %v; want ErrForeignNode naming it", root, err)
		}
		if data, st, _ := op.Get(root); len(data) != 0 || st.NumChildren != 0 {
			t.Errorf("init wrote into %s: %q, %d children", root, data, st.NumChildren)
		}
	}
	// An empty root with the fleet's own ACL (made to set it first) is the
	// operator's: adopted.
	if _, err := op.Create("/mine", nil, 0, secureScheme(t).Root()); err != nil {
		t.Fatal(err)
	}
	ic := tree.DefaultInitConfig()
	ic.Root, ic.ACL, ic.NewFleet = "/mine", secureScheme(t), true
	if res, err := tree.InitRoot(context.Background(), op, ic); err != nil || !res.Made {
		t.Fatalf("init over an empty root with the fleet's ACL: %+v, %v; want made", res, err)
	}
}

// Nothing a znode's maker puts outside the fleet's tree stops a start or
// counts as a fleet (#36 item 1): decoy roots with the layout marker (one
// world-writable, one naming a made-up admin digest, one with broken
// ranges), a znode nobody else may read (the walk of the ensemble used to
// refuse every start over it), 10,001 junk znodes. The worker reads the
// registry, not the tree (3 reads here, whatever the junk); the world and
// the workers' identity can write nothing into the registry, so no decoy
// can be registered either.
func TestDecoysAndJunkDoNotStopStart(t *testing.T) {
	zs := startZK(t)
	root := "/real"
	initSecure(t, zs.Addr(), root)
	world := dialAs(t, zs.Addr(), "")
	all := tree.NewRootInfo(tree.LayoutV3, time.Now())
	all.Datacenters = "0-31"
	broken := tree.NewRootInfo(tree.LayoutV3, time.Now())
	broken.Datacenters = "nonsense"
	for p, data := range map[string][]byte{"/decoy": tree.EncodeRoot(all), "/deep": nil, "/deep/in/side": nil, "/deep/in/side/decoy": tree.EncodeRoot(broken)} {
		if err := mkdirs(world, p, data); err != nil {
			t.Fatal(err)
		}
	}
	madeUp := append(zk.DigestACL(zk.PermAll, "fake-admin", "nobody-knows"), zk.WorldACL(zk.PermRead)...)
	if _, err := world.Create("/trusted-looking", tree.EncodeRoot(all), 0, madeUp); err != nil {
		t.Fatal(err)
	}
	if _, err := world.Create("/x", nil, 0, zk.DigestACL(zk.PermAll, "mallory", "secret")); err != nil {
		t.Fatal(err)
	}
	if _, err := world.Create("/junk", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	const junk = 10_001
	for i := 0; i < junk; i += 500 {
		var ops []any
		for j := i; j < min(i+500, junk); j++ {
			ops = append(ops, &zk.CreateRequest{Path: fmt.Sprintf("/junk/n%05d", j), Acl: zk.WorldACL(zk.PermAll)})
		}
		if _, err := world.Multi(ops...); err != nil {
			t.Fatal(err)
		}
	}
	reg, err := tree.ReadRegistry(world, false)
	if err != nil || len(reg.Fleets) != 1 || reg.Fleets[0].Root != root || reg.Nodes != 4 {
		t.Fatalf("registry: %+v, %v; want %s alone, in 4 reads (the registry's ACL and list, the entry's data and ACL)", reg, err, root)
	}
	for who, conn := range map[string]*zk.Conn{"the world": world, "the workers' identity": dialAs(t, zs.Addr(), testWorker)} {
		if _, err := conn.Create(tree.RegistryNode("/decoy"), []byte(`{"root":"/decoy","datacenters":"0-31"}`), 0, zk.WorldACL(zk.PermAll)); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("%s registered a decoy: %v; want ErrNoAuth", who, err)
		}
		if err := tree.Register(conn, tree.FleetACL{}, "/decoy", tree.CurrentRootInfo(time.Now())); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("%s registered a decoy through Register: %v; want ErrNoAuth", who, err)
		}
	}
	reg2 := prometheus.NewRegistry()
	w := startWorkerWith(t, "w", secureConfig(zs.Addr(), root), newRecorder(), reg2)
	w.waitReady(60 * time.Second)
	if v := gaugeValue(t, reg2, "snowflake_coordinator_zk_insecure"); v != 0 {
		t.Errorf("snowflake_coordinator_zk_insecure %v with credentials, want 0", v)
	}
}

// A registry that someone other than a fleet's operator made before the
// first init (world-writable) proves nothing: init refuses to register
// there (ErrRegistryUntrusted) and names the runbook's fix; once the
// operator removed it (here by hand; the runbook uses the superDigest),
// init makes its own, closed to all but the operator, and the worker
// serves.
func TestSquattedRegistry(t *testing.T) {
	zs := startZK(t)
	world := dialAs(t, zs.Addr(), "")
	if _, err := world.Create(tree.RegistryPath, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	ic := tree.DefaultInitConfig()
	ic.Root, ic.ACL, ic.NewFleet = "/sq", secureScheme(t), true
	op := dialAs(t, zs.Addr(), testOperator)
	_, err := tree.InitRoot(context.Background(), op, ic)
	if !errors.Is(err, tree.ErrRegistryUntrusted) || !strings.Contains(err.Error(), "a znode or ACL I did not make blocks the fleet") {
		t.Fatalf("init beside a world-writable registry: %v; want ErrRegistryUntrusted naming the runbook", err)
	}
	if ok, _, _ := op.Exists("/sq"); ok {
		t.Fatal("init made its root beside a registry it could not trust")
	}
	if err := world.Delete(tree.RegistryPath, -1); err != nil {
		t.Fatal(err)
	}
	if _, err := tree.InitRoot(context.Background(), op, ic); err != nil {
		t.Fatalf("init after the squat was removed: %v", err)
	}
	acl, _, err := world.GetACL(tree.RegistryPath)
	if err != nil || !tree.SameACL(acl, secureScheme(t).Root()) {
		t.Fatalf("registry ACL %s (%v); want the operator's, the world reading", tree.FormatACL(acl), err)
	}
	w := startWorker(t, "w", secureConfig(zs.Addr(), "/sq"), nil)
	w.waitReady(30 * time.Second)
}

// mkdirs creates p (and its missing parents, empty), world-writable.
func mkdirs(conn *zk.Conn, p string, data []byte) error {
	parts := strings.Split(strings.Trim(p, "/"), "/")
	for i := 1; i <= len(parts); i++ {
		q := "/" + strings.Join(parts[:i], "/")
		var d []byte
		if i == len(parts) {
			d = data
		}
		if _, err := conn.Create(q, d, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
		if i == len(parts) && d != nil {
			if _, err := conn.Set(q, d, -1); err != nil {
				return err
			}
		}
	}
	return nil
}

// Without credentials a coordinator runs only when told it is insecure
// (#24 item 2), and then exports it.
func TestInsecureGauge(t *testing.T) {
	if _, err := New(DefaultConfig(), nil, nil); err == nil || !strings.Contains(err.Error(), "Insecure") {
		t.Fatalf("New without credentials nor Insecure: %v; want refused naming Insecure", err)
	}
	reg := prometheus.NewRegistry()
	var buf lockedBuffer
	if _, err := New(insecureDefault(), hclog.New(&hclog.LoggerOptions{Output: &buf}), reg); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "[WARN]  running without ZooKeeper credentials (insecure)") {
		t.Errorf("New with Insecure logged %q; want a warning", buf.String())
	}
	if v := gaugeValue(t, reg, "snowflake_coordinator_zk_insecure"); v != 1 {
		t.Fatalf("snowflake_coordinator_zk_insecure %v without credentials, want 1", v)
	}
}

// holderAndStandby makes root a secured fleet on the ZooKeeper at addr,
// and starts A holding testSlot and B standing by for it.
func holderAndStandby(t *testing.T, addr, root string) (pinnedConfig, *recorder, *worker, *worker) {
	t.Helper()
	initSecure(t, addr, root)
	cfg := pinned(secureConfig(addr, root), testSlot)
	rec := newRecorder()
	a := startWorker(t, "A", cfg, rec)
	a.waitReady(15 * time.Second)
	b := startWorker(t, "B", cfg, rec)
	waitFor(t, 15*time.Second, "B standing by", func() bool { return b.c.Status().State == StateStandby })
	return cfg, rec, a, b
}

// An ACL loosened while workers run (#24 item 4): the holder keeps serving
// (ZooKeeper has no watch on ACLs), but the slot node's ACL is read again
// before a claim's first write, so a standby that started on a trusted
// tree does not take the slot once the world may write it: it avoids it,
// and with nothing else to claim Run stops naming snowflakectl secure.
func TestClaimRefusesSlotLoosenedWhileRunning(t *testing.T) {
	zs := startZK(t)
	root := "/loosened"
	cfg, rec, a, b := holderAndStandby(t, zs.Addr(), root)

	op := dialAs(t, zs.Addr(), testOperator)
	loose := append(secureScheme(t).Slot(), zk.ACL{Perms: zk.PermWrite, Scheme: "world", ID: "anyone"})
	if _, err := op.SetACL(zklayout.SlotPath(root, testSlot), loose, -1); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * cfg.Renew)
	if !a.c.Ready() {
		t.Fatal("the holder stopped serving when its slot's ACL was loosened")
	}
	a.Stop()
	select {
	case err := <-b.done:
		if !errors.Is(err, ErrSlotsRefused) || !errors.Is(err, tree.ErrUntrustedTree) || !strings.Contains(err.Error(), "snowflakectl secure") {
			t.Fatalf("B's Run: %v; want ErrSlotsRefused wrapping ErrUntrustedTree, naming snowflakectl secure", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("B still running 20s after the loosened slot freed (state %s, claims %d)", b.c.getState(), b.c.Status().Claims)
	}
	b.stopOnce.Do(func() {})
	if b.c.Status().Claims != 0 {
		t.Fatal("B claimed a slot the world may write")
	}
	rec.checkDisjoint(t)
}

// A session's start reads the ACLs of the root, leases/, slots/ and
// standby/ only (#36 item 5); a slot node's ACL is read when that slot is
// claimed. One slot node whose ACL shuts our identity out costs that slot,
// not the start: before, the start read the ACL of every slot the worker
// may claim (1,024 reads a session), and one such slot refused the tree.
func TestSlotACLReadAtClaim(t *testing.T) {
	zs := startZK(t)
	root := "/shut"
	initSecure(t, zs.Addr(), root)
	shut, open := mustSlot(t, "dc04-m00"), mustSlot(t, "dc04-m01")
	op := dialAs(t, zs.Addr(), testOperator)
	if _, err := op.SetACL(zklayout.SlotPath(root, shut), tree.ACL(testOperator), -1); err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	w := startWorker(t, "W", pinned(secureConfig(zs.Addr(), root), shut, open), rec)
	w.waitReady(20 * time.Second)
	if got := w.c.Status().Slot; got != open.String() {
		t.Fatalf("worker serves %s; want %s (%s's ACL grants it nothing)", got, open, shut)
	}
	if len(rec.holdings(shut)) != 0 {
		t.Fatalf("IDs issued on %s, whose slot node the worker may not write", shut)
	}
}

// The workers' identity holds admin on no node of the fleet (#39 item 3):
// with it, one worker could re-ACL another's live lease node to the world
// and anyone could then rewrite its address. Lease and standby nodes are
// written once, at their create, and carry world:anyone:r only. Before,
// they carried the worker's identity with cdrwa.
func TestWorkerIdentityCannotSetACL(t *testing.T) {
	zs := startZK(t)
	root := "/noadmin"
	_, rec, a, b := holderAndStandby(t, zs.Addr(), root)

	wk := dialAs(t, zs.Addr(), testWorker)
	var standbys []string
	waitFor(t, 10*time.Second, "B's standby node", func() bool {
		names, _, err := wk.Children(tree.StandbyPath(root))
		standbys = names
		return err == nil && len(names) > 0
	})
	nodes := []string{root, zklayout.LeasesPath(root), zklayout.SlotsPath(root), tree.StandbyPath(root),
		zklayout.SlotPath(root, testSlot), zklayout.LeasesPath(root) + "/" + a.c.Status().LeaseNode,
		tree.StandbyPath(root) + "/" + standbys[0]}
	for _, p := range nodes {
		if _, err := wk.SetACL(p, zk.WorldACL(zk.PermAll), -1); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("the workers' identity set the ACL of %s: %v; want ErrNoAuth", p, err)
		}
	}
	lease := nodes[5]
	if _, err := wk.Set(lease, []byte(`{"addr":"rogue:7609"}`), -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("the workers' identity rewrote a live lease node: %v; want ErrNoAuth", err)
	}
	if !a.c.Ready() {
		t.Fatal("A stopped serving")
	}
	// Its own nodes are still its worker's to delete (d on the parent).
	a.Stop()
	waitFor(t, 15*time.Second, "B serving after A released", b.c.Ready)
	rec.checkDisjoint(t)
}
