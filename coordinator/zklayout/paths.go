package zklayout

import (
	"path"

	"github.com/snowfleet/snowfleet/snowflake"
)

// DefaultRoot is the default root znode.
const DefaultRoot = "/snowflake"

// ValidRoot reports whether root can be a fleet's root znode: an absolute
// path, not "/" itself, without a trailing slash. The coordinator, the client
// and snowflakectl all check --zk-root with it.
func ValidRoot(root string) bool {
	return len(root) > 1 && root[0] == '/' && root[len(root)-1] != '/'
}

// LeasesPath is the parent of the lease nodes.
func LeasesPath(root string) string { return path.Join(root, "leases") }

// SlotsPath is the parent of the slot nodes.
func SlotsPath(root string) string { return path.Join(root, "slots") }

// SlotPath is the persistent node of one slot, e.g. /snowflake/slots/dc07-m13.
func SlotPath(root string, s snowflake.Slot) string { return path.Join(SlotsPath(root), s.String()) }

// LeasePrefix is the path a claim of slot s creates its ephemeral sequential
// node with: the server appends a 10-digit sequence, the protected create
// puts _c_<guid>- in front of the name.
func LeasePrefix(root string, s snowflake.Slot) string {
	return LeasesPath(root) + "/" + s.String() + "-"
}
