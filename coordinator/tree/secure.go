package tree

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/snowfleet/snowfleet/coordinator/zkconn"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
)

// SecureResult is what SecureTree did.
type SecureResult struct {
	// Changed are the nodes whose ACL was set, each with the ACL it had.
	Changed []ACLChange
	// Made are the nodes of the layout it made (standby/, when missing).
	Made []string
	// Checked is how many nodes were looked at.
	Checked int
}

// ACLChange is one node's ACL as SecureTree found and left it.
type ACLChange struct {
	Path     string
	Was, Now []zk.ACL
}

// SecureTree is snowflakectl secure: it sets the ACL of every node of the
// fleet's tree (the root, leases/, slots/, standby/, the slot nodes, and
// the lease and standby nodes that exist), and of the fleet registry and
// the root's entry in it, to the scheme's (see FleetACL),
// making standby/ if it is missing. A node whose ACL is the scheme's
// already is left alone, so a second run changes nothing. The lease and
// standby nodes get WorkerNodeACL: world read, nobody's write or admin.
// conn must hold an identity with admin on every node: the world's, on a
// tree made without credentials; the operator's after, and the workers'
// too for lease and standby nodes made before WorkerNodeACL (worker
// cdrwa). It does not read or write any node's data.
func SecureTree(ctx context.Context, conn *zk.Conn, root string, scheme FleetACL) (SecureResult, error) {
	if !zklayout.ValidRoot(root) {
		return SecureResult{}, fmt.Errorf("secure: root %q is not an absolute znode path", root)
	}
	if scheme.Insecure() {
		return SecureResult{}, errors.New("secure: no credentials: give the operator's and the workers' identities")
	}
	return zkconn.CallResult(ctx, "secure", func(res *SecureResult) error { return secureTree(conn, root, scheme, res) })
}

func secureTree(conn *zk.Conn, root string, scheme FleetACL, res *SecureResult) error {
	data, _, err := conn.Get(root)
	if errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("secure: %w: root %s is missing (snowflakectl init makes a fleet)", ErrDamaged, root)
	}
	if err != nil {
		return fmt.Errorf("secure: read root %s: %w", root, err)
	}
	if _, err := DecodeRoot(root, data); err != nil {
		return fmt.Errorf("secure: %w", err)
	}
	// The root first: once it is the operator's, nobody else can add to
	// it while the rest is done.
	// The fleet registry and the root's entry in it too (when there): a
	// registry made without credentials would otherwise let anyone
	// register a fleet, or rewrite this one's datacenters.
	want := map[string][]zk.ACL{root: scheme.Root(), RegistryPath: scheme.Root(), RegistryNode(root): scheme.Root()}
	order := []string{root, RegistryPath, RegistryNode(root)}
	for _, p := range []string{zklayout.LeasesPath(root), zklayout.SlotsPath(root), StandbyPath(root)} {
		want[p] = scheme.For(root, p)
		order = append(order, p)
	}
	if err := setACLs(conn, order[:3], want, res); err != nil {
		return err
	}
	if _, err := conn.Create(StandbyPath(root), nil, 0, scheme.Parent()); err == nil {
		res.Made = append(res.Made, StandbyPath(root))
	} else if !errors.Is(err, zk.ErrNodeExists) {
		return fmt.Errorf("secure: create %s: %w", StandbyPath(root), err)
	}
	if err := setACLs(conn, order[3:], want, res); err != nil {
		return err
	}
	own := WorkerNodeACL(!scheme.Insecure())
	var kids []string
	for _, dir := range []string{zklayout.SlotsPath(root), zklayout.LeasesPath(root), StandbyPath(root)} {
		names, _, err := conn.Children(dir)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return fmt.Errorf("secure: list %s: %w", dir, err)
		}
		for _, n := range names {
			p := path.Join(dir, n)
			kids = append(kids, p)
			if dir == zklayout.SlotsPath(root) {
				want[p] = scheme.Slot()
			} else {
				want[p] = own
			}
		}
	}
	sort.Strings(kids)
	return setACLs(conn, kids, want, res)
}

// setACLs sets each path's ACL to want[path] where it differs, 32 at once;
// a node gone meanwhile (a lease released) is skipped.
func setACLs(conn *zk.Conn, paths []string, want map[string][]zk.ACL, res *SecureResult) error {
	var mu sync.Mutex
	err := zkconn.ForEach(paths, func(p string) error {
		have, st, err := conn.GetACL(p)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("secure: read the ACL of %s: %w", p, err)
		}
		mu.Lock()
		res.Checked++
		mu.Unlock()
		if SameACL(have, want[p]) {
			return nil
		}
		if _, err := conn.SetACL(p, want[p], st.Aversion); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return fmt.Errorf("secure: set the ACL of %s (was %s): %w", p, FormatACL(have), err)
		}
		mu.Lock()
		res.Changed = append(res.Changed, ACLChange{Path: p, Was: have, Now: want[p]})
		mu.Unlock()
		return nil
	})
	sort.Slice(res.Changed, func(i, j int) bool { return res.Changed[i].Path < res.Changed[j].Path })
	return err
}

// FleetACLFromTree is the scheme of the tree under root as its operator
// sees it, for repair and recover, which are given the operator's
// credentials only: the workers' identity is the digest entry of leases/
// that may create and delete but not administer (the operator's own when
// there is none: a single-identity fleet). Without operator credentials,
// or for a tree the world may write (made with --zk-insecure), it is the
// insecure scheme: nodes made match the tree, which secure changes whole.
func FleetACLFromTree(conn *zk.Conn, root, operatorAuth string) (FleetACL, error) {
	if operatorAuth == "" {
		return FleetACL{}, nil
	}
	op, err := DigestID(operatorAuth)
	if err != nil {
		return FleetACL{}, err
	}
	scheme := FleetACL{operator: op, worker: op}
	acl, _, err := conn.GetACL(zklayout.LeasesPath(root))
	if errors.Is(err, zk.ErrNoNode) {
		return scheme, nil
	}
	if err != nil {
		return FleetACL{}, fmt.Errorf("read the ACL of %s: %w", zklayout.LeasesPath(root), err)
	}
	if WorldWrites(acl) {
		return FleetACL{}, nil // a tree made without credentials: keep it so (secure changes it)
	}
	for _, e := range acl {
		if e.Scheme == "digest" && e.ID != op.ID && e.Perms&zk.PermAdmin == 0 && e.Perms&zk.PermCreate != 0 {
			scheme.worker = e
			scheme.worker.Perms = 0
		}
	}
	return scheme, nil
}
