package coordinator

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zkconn"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/snowflake"
)

// identityHint is what a protected tree that grants our identity nothing
// tells the operator: the workers' identity is another one.
const identityHint = "give the workers' identity, the file given to snowflakectl init or secure as --zk-worker-auth-file (snowflaked --zk-auth-file), or run snowflakectl secure with this identity as the workers'"

// secureHint is what an untrusted tree's error tells the operator to run.
const secureHint = "run snowflakectl secure --zk-auth-file OPERATOR --zk-worker-auth-file WORKER (deploy/runbook.md: the fleet's tree is not protected)"

// checkTrust reads the ACLs of the root, leases/, slots/ and standby/, and
// refuses (ErrUntrustedTree) a tree the world may write, or one that does
// not grant our identity what a worker needs: create and delete in leases/
// and standby/. Trust is checked, not assumed: a fleet made without
// credentials stays world-writable after its workers are given some.
// Without credentials (Insecure) there is nothing to check against. A slot
// node's ACL is read when the slot is claimed (slotTrusted), not here: a
// session's start then costs 4 reads, not one for each of the 1,024 slots.
//
// ZooKeeper has no watch on ACLs: a node whose ACL is loosened while we
// serve is seen at the next session's start; one tightened against us is
// a refusal, which drops the lease at its next write (ErrNoAuth).
func (s *leaseLoop) checkTrust(ctx context.Context) error {
	auth := s.c.cfg.Auth
	if auth == "" {
		return nil
	}
	if _, err := tree.DigestID(auth); err != nil {
		return err
	}
	root := s.c.cfg.Root
	type need struct {
		path  string
		perms int32
	}
	needs := []need{{root, zk.PermRead}, {zklayout.LeasesPath(root), zk.PermCreate | zk.PermDelete | zk.PermRead},
		{zklayout.SlotsPath(root), zk.PermRead}, {tree.StandbyPath(root), zk.PermCreate | zk.PermDelete}}
	want := make(map[string]int32, len(needs))
	paths := make([]string, len(needs))
	for i, n := range needs {
		want[n.path], paths[i] = n.perms, n.path
	}
	var (
		mu      sync.Mutex
		bad     []string
		gone    []string
		lacking int // of bad, those the world may not write: our identity lacks a right
	)
	err := s.call(ctx, tree.ReadTimeout, func() error {
		return zkconn.ForEach(paths, func(p string) error {
			acl, _, err := s.conn.GetACL(p)
			if errors.Is(err, zk.ErrNoNode) {
				mu.Lock()
				gone = append(gone, p)
				mu.Unlock()
				return nil // damage, reported where it is met
			}
			if err != nil {
				return fmt.Errorf("read the ACL of %s: %w", p, err)
			}
			why := tree.Distrust(acl, auth, want[p])
			if why != "" {
				mu.Lock()
				bad = append(bad, fmt.Sprintf("%s (ACL %s: %s)", p, tree.FormatACL(acl), why))
				if !tree.WorldWrites(acl) {
					lacking++
				}
				mu.Unlock()
			}
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("check the tree's ACLs: %w", err)
	}
	for _, p := range gone {
		if p == tree.StandbyPath(root) {
			s.c.log.Warn("standby/ is missing: standbys stay unseen (holders keep their full horizon)", "fix", "snowflakectl secure makes it")
		}
	}
	if len(bad) > 0 {
		hint := secureHint
		if lacking == len(bad) {
			// Protected, but not for us: the wrong identity, most often.
			hint = identityHint
		}
		more := ""
		if len(bad) > 3 {
			more = fmt.Sprintf(" and %d more", len(bad)-3)
			bad = bad[:3]
		}
		return fmt.Errorf("%w: refusing to serve from root %s: %v%s; %s", tree.ErrUntrustedTree, root, bad, more, hint)
	}
	return nil
}

// slotTrusted is checkTrust for the one slot node a claim is about to
// write: the world may not write it, and our identity must read and write
// it. A slot refused here is avoided (logged at error), not the tree.
func (s *leaseLoop) slotTrusted(ctx context.Context, sl snowflake.Slot) error {
	if s.c.cfg.Auth == "" {
		return nil
	}
	p := zklayout.SlotPath(s.c.cfg.Root, sl)
	var acl []zk.ACL
	err := s.call(ctx, 0, func() (err error) { acl, _, err = s.conn.GetACL(p); return })
	if err != nil {
		return nil // a read error is met again by the claim's own read
	}
	if why := tree.Distrust(acl, s.c.cfg.Auth, zk.PermRead|zk.PermWrite); why != "" {
		return fmt.Errorf("%w: slot node %s has ACL %s: %s; %s", tree.ErrUntrustedTree, p, tree.FormatACL(acl), why, secureHint)
	}
	return nil
}
