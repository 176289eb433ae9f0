package coordinator

import (
	"context"
	"fmt"

	"github.com/snowfleet/snowfleet/coordinator/tree"
)

// registry reads the ensemble's fleet registry on the session, bounded by
// tree.ReadTimeout: past it the call returns, and checkRoot tries again
// (the scope unverified, the worker does not serve meanwhile).
func (s *leaseLoop) registry(ctx context.Context) (tree.Scan, error) {
	if len(s.c.cfg.ScanSkip) > 0 || s.c.cfg.ScanLimit > 0 {
		s.c.log.Warn("--zk-scan-skip and --zk-scan-limit are ignored: fleets are registered, not searched for",
			"registry", tree.RegistryPath)
	}
	var res tree.Scan
	err := s.call(ctx, tree.ReadTimeout, func() (err error) {
		res, err = tree.ReadRegistry(s.conn, s.c.cfg.Auth == "")
		return
	})
	if err != nil {
		return tree.Scan{}, fmt.Errorf("read the ensemble's fleet registry: %w", err)
	}
	for _, f := range res.Ignored {
		s.c.log.Warn("fleet registry: an entry anyone may write; not counted",
			"entry", tree.RegistryNode(f.Root), "why", f.Untrusted, "fix", "snowflakectl secure --zk-root "+f.Root+", or delete it")
	}
	return res, nil
}

// checkScope reads the datacenters the root owns, refuses a pinned
// datacenter outside them, a root the fleet registry does not hold with
// them, and another registered fleet owning one of them.
func (s *leaseLoop) checkScope(ctx context.Context, info tree.RootInfo) error {
	root := s.c.cfg.Root
	owned, err := info.Owned()
	if err != nil {
		return fmt.Errorf("root %s: %w", root, err)
	}
	if dc := s.c.cfg.Datacenter; dc >= 0 && !owned.Has(dc) {
		return fmt.Errorf("%w: pinned datacenter %d is outside the datacenters root %s owns (%s)", tree.ErrOutsideFleet, dc, root, owned)
	}
	reg, err := s.registry(ctx)
	if err != nil {
		return err
	}
	if err := tree.CheckRegistered(root, owned, reg); err != nil {
		return err
	}
	if err := tree.CheckScope(root, owned, reg); err != nil {
		return err
	}
	s.owned = owned
	s.c.owned.Store(uint32(owned))
	s.c.log.Info("fleet scope verified", "root", root, "datacenters", owned.String(),
		"fleets_registered", len(reg.Fleets), "reads", reg.Nodes)
	return nil
}
