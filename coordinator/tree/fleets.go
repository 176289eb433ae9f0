package tree

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/snowfleet/snowfleet/coordinator/zkconn"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
)

// IDs are unique per (ensemble, root) and, across roots, only as far as the
// fleets' datacenters are disjoint: two fleets owning one datacenter hand
// out the same slots. So a worker finds every fleet of its ensemble before
// it serves, and refuses to serve when another one owns a datacenter its
// own root owns.

var (
	// ErrFleetOverlap: another fleet of the ensemble owns a datacenter this
	// fleet owns (or would own).
	ErrFleetOverlap = errors.New("fleets overlap")
	// ErrOutsideFleet: the worker is pinned to a datacenter its fleet does
	// not own.
	ErrOutsideFleet = errors.New("datacenter outside the fleet's ranges")
	// ErrScanLimit: the ensemble holds more nodes outside fleet roots than
	// a scan given a node count (ScanLimit) may read, so the fleets in it
	// are not known for sure. The default has no count: it is time-bound.
	ErrScanLimit = errors.New("too many znodes to find every fleet")
	// ErrScanUnreadable: ZooKeeper refused the scan a subtree (its ACL), so
	// a fleet below it would go unseen and the scope cannot be verified.
	// Errors with it wrap zk.ErrNoAuth too.
	ErrScanUnreadable = errors.New("the scan for fleets cannot read every subtree")
)

// DefaultScanLimit is the default node count a scan for fleets reads at
// most: 0, none. A count is a bound anyone who can make znodes can exceed
// (and so stop every worker's start); the scan is bounded by time instead
// (ScanTimeout for a worker, the caller's timeout for snowflakectl).
const DefaultScanLimit = 0

// FleetRoot is one fleet's root found in an ensemble.
type FleetRoot struct {
	// Root is the root znode's path.
	Root string
	// Layout is the root's layout name.
	Layout string
	// Owned are the datacenters it owns; Err is set instead when its
	// ranges do not read.
	Owned DCSet
	Err   error
	// Untrusted says why the root's ACL is not one a fleet's operator
	// made ("" when it is; see Trusted): the world may write it, or no
	// digest identity holds admin on it. Such a root is anyone's decoy
	// as far as a scan can tell.
	Untrusted string
}

// Scan is what ScanFleets found.
type Scan struct {
	// Fleets are the fleet roots, sorted by path.
	Fleets []FleetRoot
	// Nodes is how many znodes were read.
	Nodes int
	// Unreadable are nodes whose data or children ZooKeeper refused us
	// (their ACL): a fleet's root is always world-readable, so none of
	// them is one, but nothing below them was seen either, so CheckScope
	// refuses a scan with any (ErrScanUnreadable).
	Unreadable []string
	// Skipped are the subtrees the operator named to be skipped (the skip
	// paths given to ScanFleets, Config.ScanSkip) that the walk met and did
	// not enter: whatever fleet is in them is not checked.
	Skipped []string
	// Ignored are the roots OnlyTrusted took out of Fleets (untrusted
	// ACLs): reported, not counted.
	Ignored []FleetRoot
}

// OnlyTrusted is the scan with only the fleet roots whose ACL a fleet's
// operator made (FleetRoot.Untrusted ""), the others moved to Ignored. A
// scan run with credentials counts only those: a node anyone could write,
// with a layout marker, must not stop a worker's start. Run without
// credentials (--zk-insecure), a fleet's own root is world-open too, and
// every root counts.
func (s Scan) OnlyTrusted() Scan {
	var kept []FleetRoot
	for _, f := range s.Fleets {
		if f.Untrusted == "" {
			kept = append(kept, f)
		} else {
			s.Ignored = append(s.Ignored, f)
		}
	}
	s.Fleets = kept
	return s
}

// ScanFleets walks the ensemble's tree breadth first from / and returns
// every fleet root in it, recognised by its layout marker (a JSON "layout"
// starting with snowfleet/slots/) wherever it sits. It does not descend
// into a fleet root (whose 2,000 children are its own), nor into
// /zookeeper, nor into the subtrees skip names (absolute paths, see
// ValidSkipPath; reported in Scan.Skipped when met). Each fleet root's ACL
// is read into FleetRoot.Untrusted. With limit > 0 it reads at most limit
// nodes and fails with ErrScanLimit beyond; with 0 (DefaultScanLimit) it
// has no count bound. go-zookeeper has no call timeouts: bound the call by
// time from outside, or use ScanFleetsCtx.
func ScanFleets(conn *zk.Conn, limit int, skip ...string) (Scan, error) {
	return ScanFleetsCtx(context.Background(), conn, limit, skip...)
}

// ScanFleetsCtx is ScanFleets that stops reading when ctx ends (its
// deadline is the scan's bound), failing with ctx's error.
func ScanFleetsCtx(ctx context.Context, conn *zk.Conn, limit int, skip ...string) (Scan, error) {
	skipped := map[string]bool{}
	for _, p := range skip {
		skipped[path.Clean(p)] = true
	}
	var (
		res Scan
		mu  sync.Mutex
	)
	// unreadable sorts a read's error: a node gone meanwhile is skipped, one
	// whose ACL refuses us is skipped and named, anything else ends the scan.
	unreadable := func(p, what string, err error) (skip bool, _ error) {
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return true, nil
		case errors.Is(err, zk.ErrNoAuth):
			mu.Lock()
			res.Unreadable = append(res.Unreadable, p)
			mu.Unlock()
			return true, nil
		case err != nil:
			return true, fmt.Errorf("scan for fleets: %s %s: %w", what, p, err)
		}
		return false, nil
	}
	level := []string{"/"}
	for len(level) > 0 {
		if err := ctx.Err(); err != nil {
			return res, fmt.Errorf("scan for fleets: stopped after %d znodes: %w", res.Nodes, err)
		}
		if limit > 0 && res.Nodes+len(level) > limit {
			return res, fmt.Errorf("%w: more than %d znodes outside fleet roots (raise the scan limit)", ErrScanLimit, limit)
		}
		res.Nodes += len(level)
		var next []string
		err := zkconn.ForEach(level, func(p string) error {
			if ctx.Err() != nil {
				return nil // the level's end reports it
			}
			data, st, err := conn.Get(p)
			if skip, err := unreadable(p, "read", err); skip || err != nil {
				return err
			}
			if f, ok := asFleet(p, data); ok {
				acl, _, err := conn.GetACL(p)
				switch {
				case errors.Is(err, zk.ErrNoNode):
					return nil
				case err != nil:
					f.Untrusted = "its ACL cannot be read: " + err.Error()
				default:
					f.Untrusted = Trusted(acl)
				}
				mu.Lock()
				res.Fleets = append(res.Fleets, f)
				mu.Unlock()
				return nil
			}
			if st.NumChildren == 0 {
				return nil
			}
			kids, _, err := conn.Children(p)
			if skip, err := unreadable(p, "list", err); skip || err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			for _, k := range kids {
				switch c := path.Join(p, k); {
				case c == "/zookeeper":
				case skipped[c]:
					res.Skipped = append(res.Skipped, c)
				default:
					next = append(next, c)
				}
			}
			return nil
		})
		if err != nil {
			return res, err
		}
		sort.Strings(next)
		level = next
	}
	sort.Slice(res.Fleets, func(i, j int) bool { return res.Fleets[i].Root < res.Fleets[j].Root })
	sort.Strings(res.Unreadable)
	sort.Strings(res.Skipped)
	return res, nil
}

// ValidSkipPath reports whether p can name a subtree the scan for fleets
// skips: an absolute, clean znode path other than / itself.
func ValidSkipPath(p string) bool {
	return zklayout.ValidRoot(p) && path.Clean(p) == p
}

// asFleet reads a node's data as a fleet root's JSON.
func asFleet(p string, data []byte) (FleetRoot, bool) {
	if !strings.Contains(string(data), layoutMarker) {
		return FleetRoot{}, false
	}
	var info RootInfo
	if json.Unmarshal(data, &info) != nil || !strings.HasPrefix(info.Layout, layoutMarker) {
		return FleetRoot{}, false
	}
	f := FleetRoot{Root: p, Layout: info.Layout}
	f.Owned, f.Err = info.Owned()
	return f, true
}

// Overlap is two fleets owning the same datacenters.
type Overlap struct {
	A, B FleetRoot
	// Both are the datacenters both own.
	Both DCSet
}

func (o Overlap) String() string {
	return fmt.Sprintf("%s (%s) and %s (%s) both own datacenters %s", o.A.Root, o.A.Owned, o.B.Root, o.B.Owned, o.Both)
}

// Overlaps are the pairs of fleets that own a datacenter in common.
func Overlaps(fleets []FleetRoot) []Overlap {
	var out []Overlap
	for i := range fleets {
		for j := i + 1; j < len(fleets); j++ {
			if both := fleets[i].Owned & fleets[j].Owned; both != 0 {
				out = append(out, Overlap{A: fleets[i], B: fleets[j], Both: both})
			}
		}
	}
	return out
}

// CheckScope is ErrFleetOverlap naming the first fleet of scan, other
// than root itself, that owns one of owned's datacenters, else
// ErrScanUnreadable naming every subtree the scan could not read; nil
// when neither. A fleet whose ranges do not read counts as owning all 32:
// its scope cannot be verified.
func CheckScope(root string, owned DCSet, scan Scan) error {
	for _, f := range scan.Fleets {
		if f.Root == root {
			continue
		}
		theirs := f.Owned
		if f.Err != nil {
			theirs = AllDatacenters
		}
		if both := theirs & owned; both != 0 {
			return fmt.Errorf("%w: root %s owns datacenters %s, and root %s in the same ensemble owns %s (both: %s); give each fleet its own ranges (snowflakectl init --datacenters)",
				ErrFleetOverlap, root, owned, f.Root, fleetRanges(f), both)
		}
	}
	return checkReadable(root, scan)
}

// checkReadable is ErrScanUnreadable naming the subtrees scan could not
// read, nil when it read them all.
func checkReadable(root string, scan Scan) error {
	if len(scan.Unreadable) == 0 {
		return nil
	}
	return fmt.Errorf("%w: scope of root %s not verified: zookeeper refuses us the subtree(s) %s (%w), and a fleet in them would go unseen; grant our identity read access (--zk-auth), or name each subtree no fleet can be in with --zk-scan-skip",
		ErrScanUnreadable, root, strings.Join(scan.Unreadable, ", "), zk.ErrNoAuth)
}

func fleetRanges(f FleetRoot) string {
	if f.Err != nil {
		return "(unreadable ranges: " + f.Err.Error() + ")"
	}
	return f.Owned.String()
}

// ScanTimeout bounds one scan of the ensemble (32 reads at once: some
// 10,000 znodes a second here): the scan's bound is this time, not a count.
const ScanTimeout = fillTimeout
