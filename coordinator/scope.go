package coordinator

import (
	"context"
	"fmt"

	"github.com/snowfleet/snowfleet/coordinator/tree"
)

// scan runs ScanFleetsCtx on the session, bounded by scanTimeout: past it
// the call returns, the scan stops reading (a read ZooKeeper holds ends
// with the session), and checkRoot tries again (the scope unverified, the
// worker does not serve meanwhile).
func (s *claimer) scan(ctx context.Context) (tree.Scan, error) {
	sctx, cancel := context.WithTimeout(ctx, tree.ScanTimeout)
	defer cancel()
	var res tree.Scan
	err := s.call(sctx, tree.ScanTimeout, func() (err error) {
		res, err = tree.ScanFleetsCtx(sctx, s.conn, s.c.cfg.ScanLimit, s.c.cfg.ScanSkip...)
		return
	})
	if err != nil {
		return tree.Scan{}, fmt.Errorf("find the ensemble's fleets: %w", err)
	}
	if len(res.Skipped) > 0 {
		s.c.log.Warn("fleet scan skipped subtrees the operator named; a fleet in them is not checked",
			"skipped_by_operator", res.Skipped, "flag", "--zk-scan-skip")
	}
	if s.c.cfg.Auth != "" {
		res = res.OnlyTrusted()
		for _, f := range res.Ignored {
			s.c.log.Warn("fleet scan: a node with a fleet layout marker whose ACL no fleet operator made; not counted",
				"znode", f.Root, "why", f.Untrusted, "fix", "delete it, or snowflakectl secure if it is a fleet")
		}
	}
	return res, nil
}

// checkScope reads the datacenters the root owns, refuses a pinned
// datacenter outside them, and refuses to serve when another fleet of the
// ensemble owns one of them.
func (s *claimer) checkScope(ctx context.Context, info tree.RootInfo) error {
	root := s.c.cfg.Root
	owned, err := info.Owned()
	if err != nil {
		return fmt.Errorf("root %s: %w", root, err)
	}
	if dc := s.c.cfg.Datacenter; dc >= 0 && !owned.Has(dc) {
		return fmt.Errorf("%w: pinned datacenter %d is outside the datacenters root %s owns (%s)", tree.ErrOutsideFleet, dc, root, owned)
	}
	res, err := s.scan(ctx)
	if err != nil {
		return err
	}
	if err := tree.CheckScope(root, owned, res); err != nil {
		return err
	}
	s.owned = owned
	s.c.owned.Store(uint32(owned))
	s.c.log.Info("fleet scope verified", "root", root, "datacenters", owned.String(),
		"fleets_in_ensemble", len(res.Fleets), "znodes_read", res.Nodes, "skipped_by_operator", res.Skipped, "untrusted_roots", len(res.Ignored))
	return nil
}
