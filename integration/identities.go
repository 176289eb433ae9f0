//go:build integration

package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
)

// The stack is secured as it ships (deploy/security.md): the compose
// file's secrets service writes the operator and the worker ZooKeeper
// identities into volumes of the project, init runs as the operator, the
// workers as the worker, and the world reads only. The suite reads the
// tree as the world does, and writes it with the identity that may: the
// worker's for its own lease and standby nodes (it stands in for a
// worker), the operator's for what an operator does by hand.

// Identities are the stack's ZooKeeper credentials, user:password each.
type Identities struct {
	Operator string
	Worker   string
}

// Secrets runs the compose file's secrets service (it writes the
// identities when absent, as at a first start) and reads them back out of
// its volumes.
func (s *Stack) Secrets(ctx context.Context) error {
	if out, err := s.Compose(ctx, "run", "--rm", "-T", "--no-deps", "secrets"); err != nil {
		return fmt.Errorf("secrets service: %w: %s", err, out)
	}
	out, err := s.Compose(ctx, "run", "--rm", "-T", "--no-deps", "--entrypoint", "cat", "secrets",
		"/secrets/zk-operator/auth", "/secrets/zk-worker/auth")
	if err != nil {
		return fmt.Errorf("read the identities: %w", err)
	}
	lines := strings.Fields(out)
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "operator:") || !strings.HasPrefix(lines[1], "worker:") {
		return fmt.Errorf("read the identities: want an operator: and a worker: line, got %d lines", len(lines))
	}
	s.ids = Identities{Operator: lines[0], Worker: lines[1]}
	return nil
}

// DialZKAs is DialZK authenticated with the identity given (Stack.ids).
func (s *Stack) DialZKAs(ctx context.Context, auth string) (*zk.Conn, error) {
	if auth == "" {
		return nil, fmt.Errorf("no ZooKeeper identity read yet (Stack.Secrets)")
	}
	return s.dial(ctx, auth)
}

// Ctl runs snowflakectl as the operator: in a container of the init
// service (the worker image, on the zk network), which mounts both
// identities and takes the operator's as its default --zk-auth-file.
func (s *Stack) Ctl(ctx context.Context, args ...string) (string, error) {
	return s.Compose(ctx, append([]string{"run", "--rm", "-T", "--no-deps", "init"}, args...)...)
}

// checkSecured fails unless the stack is secured as it ships: the quorum
// network internal and the election port on it only, and a session
// without credentials (anyone who reaches a client port) unable to make a
// node at ZooKeeper's /, in the fleet registry, under the root, leases/,
// slots/ or standby/, or to write a slot node.
func checkSecured(ctx context.Context, st *Stack) error {
	internal, err := docker(ctx, "network", "inspect", "-f", "{{.Internal}}", st.Network("quorum"))
	if err != nil {
		return err
	}
	if internal != "true" {
		return fmt.Errorf("network %s is not internal", st.Network("quorum"))
	}
	// The election port answers on the quorum network only: from zk1, zk2
	// by its quorum name (the control) and not by its name on zk, where
	// the workers are.
	zks, err := st.ZooKeepers(ctx)
	if err != nil || len(zks) != 3 {
		return fmt.Errorf("list ZooKeeper: %d servers, %v", len(zks), err)
	}
	reach := func(addr string) bool {
		_, err := docker(ctx, "exec", zks[0].ID, "bash", "-c", "exec 3<>/dev/tcp/"+addr)
		return err == nil
	}
	if !reach("zk2-q/3888") || reach("zk2/3888") {
		return fmt.Errorf("zk2's election port: reachable on the quorum network %v, on the zk network %v; want only the quorum network", reach("zk2-q/3888"), reach("zk2/3888"))
	}
	conn, err := st.DialZK(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var open []string
	// ZooKeeper's / (init --close-ensemble-root) and the fleet registry
	// too: the world squats nothing and registers nothing (#36 items 1, 2).
	for _, dir := range []string{"", tree.RegistryPath, zkRoot, zklayout.LeasesPath(zkRoot), zklayout.SlotsPath(zkRoot), tree.StandbyPath(zkRoot)} {
		p := dir + "/world-writes-here"
		if _, err := conn.Create(p, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); !errors.Is(err, zk.ErrNoAuth) {
			open = append(open, fmt.Sprintf("create %s: %v", p, err))
		}
	}
	slots, _, err := conn.Children(zklayout.SlotsPath(zkRoot))
	if err != nil || len(slots) == 0 {
		return fmt.Errorf("list %s: %d slot nodes, %v", zklayout.SlotsPath(zkRoot), len(slots), err)
	}
	sp := zklayout.SlotsPath(zkRoot) + "/" + slots[0]
	data, stat, err := conn.Get(sp)
	if err != nil {
		return fmt.Errorf("read %s: %w", sp, err)
	}
	if _, err := conn.Set(sp, data, stat.Version); !errors.Is(err, zk.ErrNoAuth) {
		open = append(open, fmt.Sprintf("set %s (its own data): %v", sp, err))
	}
	if len(open) > 0 {
		return fmt.Errorf("the world writes the fleet's tree: %s", strings.Join(open, "; "))
	}
	return nil
}
