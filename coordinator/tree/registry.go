package tree

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfleet/snowfleet/coordinator/zkconn"
)

// The ensemble's fleet registry: one znode per fleet root under
// RegistryPath, written by init (and by repair when it makes a lost root
// again) with the operator identity, naming the root and the datacenters it
// owns. Every overlap check (init, repair, a worker's start, snowflakectl
// fleets) reads it: one list and one read per fleet, never a walk of the
// ensemble, so nothing made elsewhere in the ensemble, readable or not,
// named like a root or not, stops a start or counts as a fleet (Kafka keeps
// its brokers under a path it protects the same way). Only identities with
// create on the registry can register: the operator's (its ACL is the
// root's, FleetACL.Root), or those an operator of a shared ensemble adds to
// it (coordinator/README.md).

// RegistryPath is the fleet registry's znode. No fleet's root may be it or
// lie under it.
const RegistryPath = "/snowfleet-registry"

var (
	// ErrNotRegistered: the fleet's root is not in the ensemble's registry
	// (made by an init before the registry, or its entry names other
	// datacenters): its scope cannot be checked, so its workers do not
	// serve. snowflakectl init on the root registers it.
	ErrNotRegistered = errors.New("the fleet's root is not in the ensemble's fleet registry")
	// ErrRegistryUntrusted: the registry's ACL lets the world write it, or
	// names no identity with admin: anyone could have registered a fleet
	// there, so it proves nothing.
	ErrRegistryUntrusted = errors.New("the ensemble's fleet registry is not protected")
)

// registryEntry is the JSON of one registry node.
type registryEntry struct {
	Root        string `json:"root"`
	Layout      string `json:"layout"`
	Datacenters string `json:"datacenters"`
	// The root's bound, so that it survives the root (repair of a lost
	// root takes it from here).
	MaxHorizonMs int64 `json:"max_horizon_ms,omitempty"`
	MaxSkewMs    int64 `json:"max_skew_ms,omitempty"`
}

// RegistryNode is the registry node of root: its path escaped into one
// znode name (/snowflake is %2Fsnowflake).
func RegistryNode(root string) string { return RegistryPath + "/" + url.PathEscape(root) }

// InRegistry reports whether root is the registry's path or below it.
func InRegistry(root string) bool {
	return root == RegistryPath || len(root) > len(RegistryPath) && root[:len(RegistryPath)+1] == RegistryPath+"/"
}

// ReadRegistry reads the ensemble's fleet registry: Scan.Fleets are the
// fleets registered, sorted by root; Scan.Nodes the reads it made. An
// ensemble with no registry has no fleets. Unless insecure (a fleet run
// without credentials), a registry whose ACL the world may write, or that names no
// identity with admin, is ErrRegistryUntrusted: its entries could be
// anyone's, and so is an entry whose own ACL the world may write: it goes
// to Scan.Ignored, not counted. An entry that does not read as one counts
// as owning every datacenter (FleetRoot.Err): its scope cannot be
// verified.
// go-zookeeper has no call timeouts: bound the call from outside.
func ReadRegistry(conn *zk.Conn, insecure bool) (Scan, error) {
	var res Scan
	if !insecure {
		acl, _, err := conn.GetACL(RegistryPath)
		res.Nodes++
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return res, nil
		case err != nil:
			return res, fmt.Errorf("read the fleet registry's ACL (%s): %w", RegistryPath, err)
		}
		if why := Trusted(acl); why != "" {
			return res, fmt.Errorf("%w: %s: %s (ACL %s): someone other than a fleet's operator may have made it; the runbook's \"a znode or ACL I did not make blocks the fleet\" removes it",
				ErrRegistryUntrusted, RegistryPath, why, FormatACL(acl))
		}
	}
	names, _, err := conn.Children(RegistryPath)
	res.Nodes++
	if errors.Is(err, zk.ErrNoNode) {
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("list the fleet registry %s: %w", RegistryPath, err)
	}
	var (
		fleets []FleetRoot
		mu     sync.Mutex
	)
	err = zkconn.ForEach(names, func(name string) error {
		data, _, err := conn.Get(RegistryPath + "/" + name)
		if errors.Is(err, zk.ErrNoNode) {
			return nil // unregistered meanwhile
		}
		if err != nil {
			return fmt.Errorf("read the fleet registry's %s: %w", name, err)
		}
		f := decodeEntry(name, data)
		if !insecure {
			acl, _, err := conn.GetACL(RegistryPath + "/" + name)
			if errors.Is(err, zk.ErrNoNode) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("read the ACL of the fleet registry's %s: %w", name, err)
			}
			f.Untrusted = Trusted(acl)
		}
		mu.Lock()
		if f.Untrusted != "" {
			res.Ignored = append(res.Ignored, f)
		} else {
			fleets = append(fleets, f)
		}
		mu.Unlock()
		return nil
	})
	res.Nodes += len(names)
	if !insecure {
		res.Nodes += len(names)
	}
	sort.Slice(res.Ignored, func(i, j int) bool { return res.Ignored[i].Root < res.Ignored[j].Root })
	if err != nil {
		return res, err
	}
	sort.Slice(fleets, func(i, j int) bool { return fleets[i].Root < fleets[j].Root })
	res.Fleets = fleets
	return res, nil
}

// decodeEntry reads one registry node named name.
func decodeEntry(name string, data []byte) FleetRoot {
	root, err := url.PathUnescape(name)
	if err != nil {
		root = name
	}
	f := FleetRoot{Root: root}
	var e registryEntry
	switch {
	case err != nil:
		f.Err = fmt.Errorf("registry node %q does not name a root: %w", name, err)
	case json.Unmarshal(data, &e) != nil:
		f.Err = fmt.Errorf("registry node %q holds no fleet's JSON", name)
	case e.Root != root:
		f.Err = fmt.Errorf("registry node %q names root %q", name, e.Root)
	default:
		f.Layout = e.Layout
		f.MaxHorizon, f.MaxSkew = time.Duration(e.MaxHorizonMs)*time.Millisecond, time.Duration(e.MaxSkewMs)*time.Millisecond
		f.Owned, f.Err = ParseDCSet(e.Datacenters)
	}
	return f
}

// Register writes root's registry node, naming the datacenters it owns,
// its layout and its bound (info, the root's finished RootInfo), making the registry first when the ensemble has none (with
// scheme.Root(): the operator's, the world reading). A registry made with
// an ACL the world may write is ErrRegistryUntrusted; a node already there
// is rewritten when it names anything else. The overlap check is the
// caller's (CheckScope on ReadRegistry), before and after.
func Register(conn *zk.Conn, scheme FleetACL, root string, info RootInfo) error {
	owned, err := info.Owned()
	if err != nil {
		return fmt.Errorf("register %s: %w", root, err)
	}
	if _, err := conn.Create(RegistryPath, nil, 0, scheme.Root()); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return fmt.Errorf("make the fleet registry %s: %w", RegistryPath, err)
	}
	if !scheme.Insecure() {
		acl, _, err := conn.GetACL(RegistryPath)
		if err != nil {
			return fmt.Errorf("read the fleet registry's ACL (%s): %w", RegistryPath, err)
		}
		if why := Trusted(acl); why != "" {
			return fmt.Errorf("%w: %s: %s (ACL %s): not registering %s there; the runbook's \"a znode or ACL I did not make blocks the fleet\" removes it",
				ErrRegistryUntrusted, RegistryPath, why, FormatACL(acl), root)
		}
	}
	data, err := json.Marshal(registryEntry{Root: root, Layout: info.Layout, Datacenters: owned.String(),
		MaxHorizonMs: info.MaxHorizon().Milliseconds(), MaxSkewMs: info.MaxSkew().Milliseconds()})
	if err != nil {
		return err
	}
	node := RegistryNode(root)
	_, err = conn.Create(node, data, 0, scheme.Root())
	if !errors.Is(err, zk.ErrNodeExists) {
		if err != nil {
			return fmt.Errorf("register %s in %s: %w", root, RegistryPath, err)
		}
		return nil
	}
	have, st, err := conn.Get(node)
	if err != nil {
		return fmt.Errorf("read %s: %w", node, err)
	}
	if string(have) == string(data) {
		return nil
	}
	if _, err := conn.Set(node, data, st.Version); err != nil {
		return fmt.Errorf("register %s in %s: %w", root, RegistryPath, err)
	}
	return nil
}

// CheckRegistered is ErrNotRegistered unless reg holds root owning owned.
func CheckRegistered(root string, owned DCSet, reg Scan) error {
	for _, f := range reg.Ignored {
		if f.Root == root {
			return fmt.Errorf("%w: its entry %s is not protected (%s): run snowflakectl secure --zk-root %s (with the operator identity)",
				ErrNotRegistered, RegistryNode(root), f.Untrusted, root)
		}
	}
	for _, f := range reg.Fleets {
		if f.Root != root {
			continue
		}
		if f.Err == nil && f.Owned == owned {
			return nil
		}
		return fmt.Errorf("%w: its entry %s names datacenters %s, and the root owns %s; run snowflakectl init --zk-root %s --datacenters %s (with the operator identity) to register it again",
			ErrNotRegistered, RegistryNode(root), fleetRanges(f), owned, root, owned)
	}
	return fmt.Errorf("%w: %s has no entry %s (the root was made before the registry, or by hand); run snowflakectl init --zk-root %s --datacenters %s (with the operator identity) to register it",
		ErrNotRegistered, root, RegistryNode(root), root, owned)
}

// registeredBound is the bound (max horizon + max skew) root's entry in reg
// records, 0 when none.
func registeredBound(root string, reg Scan) time.Duration {
	for _, f := range reg.Fleets {
		if f.Root == root {
			return f.MaxHorizon + f.MaxSkew
		}
	}
	return 0
}
