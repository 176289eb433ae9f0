package tree

import (
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/snowfleet/snowfleet/coordinator/zklayout"
)

// IDs are unique per (ensemble, root) and, across roots, only as far as the
// fleets' datacenters are disjoint: two fleets owning one datacenter hand
// out the same slots. So every fleet is registered (registry.go), and a
// worker refuses to serve when another registered fleet owns a datacenter
// its own root owns.

var (
	// ErrFleetOverlap: another fleet of the ensemble owns a datacenter this
	// fleet owns (or would own).
	ErrFleetOverlap = errors.New("fleets overlap")
	// ErrOutsideFleet: the worker is pinned to a datacenter its fleet does
	// not own.
	ErrOutsideFleet = errors.New("datacenter outside the fleet's ranges")
)

// FleetRoot is one fleet registered in an ensemble.
type FleetRoot struct {
	// Root is the root znode's path.
	Root string
	// Layout is the root's layout name.
	Layout string
	// Owned are the datacenters it owns; Err is set instead when its
	// registry entry does not read.
	Owned DCSet
	Err   error
	// MaxHorizon and MaxSkew are the bound its entry records (0: an entry
	// of a build before it).
	MaxHorizon, MaxSkew time.Duration
	// Untrusted says why its registry entry's ACL is not one an operator
	// gave it ("" when it is; see Trusted): the world may write it, so its
	// datacenters are anyone's word. Such an entry is reported
	// (Scan.Ignored), never counted.
	Untrusted string
}

// Scan is what ReadRegistry read.
type Scan struct {
	// Fleets are the fleet roots, sorted by path.
	Fleets []FleetRoot
	// Nodes is how many reads it took (the registry's ACL, its list, and
	// each entry's data and ACL; without credentials, no ACL).
	Nodes int
	// Ignored are the entries whose ACL lets the world write them
	// (FleetRoot.Untrusted): not counted.
	Ignored []FleetRoot
}

// ValidSkipPath reports whether p can name a subtree (the deprecated
// --zk-scan-skip): an absolute, clean znode path other than / itself.
func ValidSkipPath(p string) bool {
	return zklayout.ValidRoot(p) && path.Clean(p) == p
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

// CheckScope is ErrFleetOverlap naming the first fleet of reg, other than
// root itself, that owns one of owned's datacenters; nil when none. A
// fleet whose entry does not read counts as owning all 32: its scope
// cannot be verified.
func CheckScope(root string, owned DCSet, reg Scan) error {
	for _, f := range reg.Fleets {
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
	return nil
}

func fleetRanges(f FleetRoot) string {
	if f.Err != nil {
		return "(unreadable: " + f.Err.Error() + ")"
	}
	return f.Owned.String()
}

// ReadTimeout bounds one read of the trust checks or the registry.
const ReadTimeout = fillTimeout
