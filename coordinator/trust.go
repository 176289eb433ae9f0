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

// secureHint is what an untrusted tree's error tells the operator to run.
const secureHint = "run snowflakectl secure --zk-auth-file OPERATOR --zk-worker-auth-file WORKER (deploy/runbook.md: the fleet's tree is not protected)"

// checkTrust reads the ACLs of the root, leases/, slots/, standby/ and the
// slot nodes this worker may claim, and refuses (ErrUntrustedTree) a tree
// the world may write, or one that does not grant our identity what a
// worker needs: create and delete in leases/ and standby/, read and write
// on the slot nodes. Trust is checked, not assumed: a fleet made without
// credentials stays world-writable after its workers are given some.
// Without credentials (Insecure) there is nothing to check against.
//
// ZooKeeper has no watch on ACLs: a node whose ACL is loosened while we
// serve is seen at the next session's start; one tightened against us is
// a refusal, which drops the lease at its next write (ErrNoAuth).
func (s *claimer) checkTrust(ctx context.Context) error {
	auth := s.c.cfg.Auth
	if auth == "" {
		return nil
	}
	me, err := tree.DigestID(auth)
	if err != nil {
		return err
	}
	root := s.c.cfg.Root
	type need struct {
		path  string
		perms int32
	}
	needs := []need{{root, zk.PermRead}, {zklayout.LeasesPath(root), zk.PermCreate | zk.PermDelete | zk.PermRead},
		{zklayout.SlotsPath(root), zk.PermRead}, {tree.StandbyPath(root), zk.PermCreate | zk.PermDelete}}
	for _, sl := range s.candidates() {
		needs = append(needs, need{zklayout.SlotPath(root, sl), zk.PermRead | zk.PermWrite})
	}
	want := make(map[string]int32, len(needs))
	paths := make([]string, len(needs))
	for i, n := range needs {
		want[n.path], paths[i] = n.perms, n.path
	}
	var (
		mu   sync.Mutex
		bad  []string
		gone []string
	)
	err = s.call(ctx, tree.ScanTimeout, func() error {
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
			why := ""
			switch {
			case tree.WorldWrites(acl):
				why = "the world may write it"
			case tree.Grants(acl, me.ID)&want[p] != want[p]:
				why = fmt.Sprintf("our identity %s lacks %s on it", zkconn.Redact(auth), tree.PermString(want[p]&^tree.Grants(acl, me.ID)))
			}
			if why != "" {
				mu.Lock()
				bad = append(bad, fmt.Sprintf("%s (ACL %s: %s)", p, tree.FormatACL(acl), why))
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
		more := ""
		if len(bad) > 3 {
			more = fmt.Sprintf(" and %d more", len(bad)-3)
			bad = bad[:3]
		}
		return fmt.Errorf("%w: refusing to serve from root %s: %v%s; %s", tree.ErrUntrustedTree, root, bad, more, secureHint)
	}
	return nil
}

// slotTrusted is checkTrust for the one slot node a claim is about to
// write: an ACL loosened since the session's start is refused at the next
// claim of the slot (avoided, logged at error).
func (s *claimer) slotTrusted(ctx context.Context, sl snowflake.Slot) error {
	if s.c.cfg.Auth == "" {
		return nil
	}
	p := zklayout.SlotPath(s.c.cfg.Root, sl)
	var acl []zk.ACL
	err := s.call(ctx, 0, func() (err error) { acl, _, err = s.conn.GetACL(p); return })
	if err != nil || !tree.WorldWrites(acl) {
		return nil // a read error is met again by the claim's own read
	}
	return fmt.Errorf("%w: slot node %s has ACL %s: the world may write it; %s", tree.ErrUntrustedTree, p, tree.FormatACL(acl), secureHint)
}
