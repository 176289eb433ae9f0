package tree

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/snowfleet/snowfleet/coordinator/zkconn"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
)

// The fleet's ACL scheme, least privilege with two digest identities: the
// operator's (snowflakectl init, repair, recover, secure) owns every node it
// makes; the workers' may do what a worker does and nothing more; the world
// reads (discovery and the read-only tools need no credentials).
//
//	node                 operator  worker        world
//	root, slots/         cdrwa     (world's r)   r
//	leases/, standby/    cdrwa     cd            r
//	slots/dcNN-mNN       cdrwa     rw            r
//	lease, standby node  (world's r) (world's r)  r     (made by the worker)
//
// ZooKeeper checks delete on the parent, so the worker's cd on leases/ and
// standby/ lets it delete its own nodes (and the operator delete any); its
// rw on the slot nodes is what the fenced Multi writes. A lease or standby
// node is written once, at its create, and never again, so nobody is given
// write or admin on it: no identity, the workers' included, can re-point a
// live lease node at another address or open it to the world
// (WorkerNodeACL). Without credentials
// (--zk-insecure) every node is world cdrwa, as the world can then do
// anything anyway.

// ErrUntrustedTree: the fleet's tree is writable by the world, or does not
// grant the worker's identity what a worker needs: a worker refuses to
// serve from it (snowflakectl secure puts it right).
var ErrUntrustedTree = errors.New("the fleet's znode tree is not protected")

// FleetACL is the fleet's ACL scheme for two digest identities. Its zero
// value (no identities) is the insecure scheme: world cdrwa everywhere.
type FleetACL struct {
	operator, worker zk.ACL // digest ids; Scheme "" when insecure
}

// NewFleetACL is the scheme for the operator's and the workers' digest
// credentials (user:password each; only their digest ids go into ACLs).
// Both empty is the insecure scheme; one without the other is an error.
// The two may be the same identity (a single-identity fleet).
func NewFleetACL(operatorAuth, workerAuth string) (FleetACL, error) {
	if operatorAuth == "" && workerAuth == "" {
		return FleetACL{}, nil
	}
	if operatorAuth == "" || workerAuth == "" {
		return FleetACL{}, errors.New("fleet ACL: give both the operator's and the workers' credentials, or neither (insecure)")
	}
	op, err := DigestID(operatorAuth)
	if err != nil {
		return FleetACL{}, fmt.Errorf("fleet ACL: operator: %w", err)
	}
	w, err := DigestID(workerAuth)
	if err != nil {
		return FleetACL{}, fmt.Errorf("fleet ACL: worker: %w", err)
	}
	return FleetACL{operator: op, worker: w}, nil
}

// DigestID is the digest ACL entry of credentials user:password.
func DigestID(auth string) (zk.ACL, error) {
	user, password, err := zkconn.ParseAuth(auth)
	if err != nil {
		return zk.ACL{}, err
	}
	return zk.DigestACL(0, user, password)[0], nil
}

// Insecure reports the world-open scheme.
func (a FleetACL) Insecure() bool { return a.operator.Scheme == "" }

// WorkerID is the workers' digest id (user:hash), "" when insecure.
func (a FleetACL) WorkerID() string { return a.worker.ID }

// OperatorID is the operator's digest id (user:hash), "" when insecure.
func (a FleetACL) OperatorID() string { return a.operator.ID }

func (a FleetACL) acl(workerPerms int32) []zk.ACL {
	if a.Insecure() {
		return zk.WorldACL(zk.PermAll)
	}
	out := []zk.ACL{{Perms: zk.PermAll, Scheme: "digest", ID: a.operator.ID}}
	if workerPerms != 0 && a.worker.ID != a.operator.ID {
		out = append(out, zk.ACL{Perms: workerPerms, Scheme: "digest", ID: a.worker.ID})
	}
	return append(out, zk.WorldACL(zk.PermRead)...)
}

// Root is the ACL of the root, slots/ and the parents init makes above the
// root: the operator's alone, the world reading.
func (a FleetACL) Root() []zk.ACL { return a.acl(0) }

// Parent is the ACL of leases/ and standby/: workers create and delete
// their nodes in them.
func (a FleetACL) Parent() []zk.ACL { return a.acl(zk.PermCreate | zk.PermDelete) }

// Slot is the ACL of a slot node: workers read and write it (the fenced
// Multi), nothing more.
func (a FleetACL) Slot() []zk.ACL { return a.acl(zk.PermRead | zk.PermWrite) }

// For is the ACL the scheme gives the node at p under root.
func (a FleetACL) For(root, p string) []zk.ACL {
	switch {
	case p == zklayout.LeasesPath(root) || p == StandbyPath(root):
		return a.Parent()
	case strings.HasPrefix(p, zklayout.SlotsPath(root)+"/"):
		return a.Slot()
	}
	return a.Root()
}

// WorkerNodeACL is the ACL a worker makes its lease and standby nodes
// with: in a secured fleet the world reads them and nobody may write them
// or change their ACL (the create writes the node's only data; delete is
// the parent's right); in an insecure one (no credentials), as every node
// there, the world may do everything.
func WorkerNodeACL(secured bool) []zk.ACL {
	if !secured {
		return zk.WorldACL(zk.PermAll)
	}
	return zk.WorldACL(zk.PermRead)
}

// ACL is the ACL an identity's own nodes carry: with auth, its digest
// identity may do everything and the world only read; without auth, the
// world may do everything. (Workers made their lease and standby nodes
// with it before WorkerNodeACL; snowflakectl secure brings those over.)
func ACL(auth string) []zk.ACL {
	id, err := DigestID(auth)
	if auth == "" || err != nil {
		return zk.WorldACL(zk.PermAll)
	}
	return append([]zk.ACL{{Perms: zk.PermAll, Scheme: "digest", ID: id.ID}}, zk.WorldACL(zk.PermRead)...)
}

// WorldWrites reports whether acl lets a client without credentials do more
// than read: the world, or an ip scheme (a network is not an identity).
func WorldWrites(acl []zk.ACL) bool {
	for _, e := range acl {
		if (e.Scheme == "world" || e.Scheme == "ip") && e.Perms&^zk.PermRead != 0 {
			return true
		}
	}
	return false
}

// sameID reports whether an ACL entry names the digest id want. ZooKeeper
// shows a reader without admin on the node the digest's user only, its
// hash as "x": the user then decides.
func sameID(e zk.ACL, want string) bool {
	if e.Scheme != "digest" {
		return false
	}
	if e.ID == want {
		return true
	}
	user, _, _ := strings.Cut(want, ":")
	return e.ID == user+":x"
}

// Grants is the permissions acl gives the digest id (world's included).
func Grants(acl []zk.ACL, id string) int32 {
	var p int32
	for _, e := range acl {
		if e.Scheme == "world" || sameID(e, id) {
			p |= e.Perms
		}
	}
	return p
}

// hasAdminDigest reports whether acl names a digest identity with admin:
// the mark of a node an operator owns.
func hasAdminDigest(acl []zk.ACL) bool {
	for _, e := range acl {
		if e.Scheme == "digest" && e.Perms&zk.PermAdmin != 0 {
			return true
		}
	}
	return false
}

// Trusted reports why a fleet root's ACL is not one a fleet's operator made
// ("" when it is): the world may not write it, and a digest identity (the
// operator) holds admin on it.
func Trusted(acl []zk.ACL) string {
	switch {
	case WorldWrites(acl):
		return "its ACL lets the world write"
	case !hasAdminDigest(acl):
		return "its ACL names no operator identity with admin"
	}
	return ""
}

// Distrust says why a worker with credentials auth may not use a node with
// acl for what needs perms ("" when it may): the world may write the node,
// or auth's identity lacks some of perms on it.
func Distrust(acl []zk.ACL, auth string, perms int32) string {
	me, err := DigestID(auth)
	if err != nil {
		return fmt.Sprintf("our credentials are not user:password (%v)", err)
	}
	switch have := Grants(acl, me.ID); {
	case WorldWrites(acl):
		return "the world may write it"
	case have&perms != perms:
		return fmt.Sprintf("our identity %s lacks %s on it", zkconn.Redact(auth), PermString(perms&^have))
	}
	return ""
}

// FormatACL is acl as zkCli's getAcl would list it, on one line.
func FormatACL(acl []zk.ACL) string {
	parts := make([]string, len(acl))
	for i, e := range acl {
		parts[i] = fmt.Sprintf("%s:%s:%s", e.Scheme, e.ID, PermString(e.Perms))
	}
	return strings.Join(parts, ",")
}

// PermString is permissions p as zkCli writes them (cdrwa).
func PermString(p int32) string {
	var b strings.Builder
	for _, x := range []struct {
		bit int32
		c   byte
	}{{zk.PermCreate, 'c'}, {zk.PermDelete, 'd'}, {zk.PermRead, 'r'}, {zk.PermWrite, 'w'}, {zk.PermAdmin, 'a'}} {
		if p&x.bit != 0 {
			b.WriteByte(x.c)
		}
	}
	return b.String()
}
