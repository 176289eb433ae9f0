package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// ensureRoot makes the root, leases/ and slots/ if missing and refuses a
// root made for another layout. Transient errors are retried until ctx ends.
func (s *session) ensureRoot(ctx context.Context) error {
	for {
		err := s.tryEnsureRoot(ctx)
		if err == nil {
			return nil
		}
		if errors.Is(err, ErrLayoutMismatch) || errors.Is(err, zk.ErrNoAuth) ||
			errors.Is(err, zk.ErrAuthFailed) || errors.Is(err, zk.ErrInvalidACL) {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.c.log.Warn("cannot prepare the root znode; retrying", "root", s.c.cfg.Root, "error", err)
		if !sleep(ctx, 500*time.Millisecond) {
			return ctx.Err()
		}
	}
}

func (s *session) tryEnsureRoot(ctx context.Context) error {
	root := s.c.cfg.Root
	var (
		data []byte
		st   *zk.Stat
	)
	err := s.c.call(ctx, 0, func() (err error) { data, st, err = s.conn.Get(root); return })
	if errors.Is(err, zk.ErrNoNode) {
		if err := s.createRoot(ctx); err != nil {
			return err
		}
		err = s.c.call(ctx, 0, func() (err error) { data, st, err = s.conn.Get(root); return })
	}
	if err != nil {
		return fmt.Errorf("read root %s: %w", root, err)
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		// Made by an operator (say, to set its ACL first): record our layout.
		info := encodeRoot(CurrentRootInfo(time.Now()))
		err := s.c.call(ctx, 0, func() error { _, err := s.conn.Set(root, info, st.Version); return err })
		if err != nil && !errors.Is(err, zk.ErrBadVersion) {
			return fmt.Errorf("write layout into root %s: %w", root, err)
		}
		return fmt.Errorf("root %s had no layout; wrote it, reading again", root)
	}
	var info RootInfo
	if err := json.Unmarshal(data, &info); err != nil {
		return fmt.Errorf("%w: root %s holds no layout JSON (%v)", ErrLayoutMismatch, root, err)
	}
	if err := info.Compatible(); err != nil {
		return fmt.Errorf("root %s: %w", root, err)
	}
	for _, p := range []string{LeasesPath(root), SlotsPath(root)} {
		var ok bool
		if err := s.c.call(ctx, 0, func() (err error) { ok, _, err = s.conn.Exists(p); return }); err != nil {
			return fmt.Errorf("check %s: %w", p, err)
		}
		if !ok {
			if err := s.create(ctx, p, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// createRoot creates the root's parents, the root with the layout, and its
// two children; nodes others made meanwhile are fine.
func (s *session) createRoot(ctx context.Context) error {
	root := s.c.cfg.Root
	parts := strings.Split(strings.Trim(root, "/"), "/")
	for i := 1; i < len(parts); i++ {
		if err := s.create(ctx, "/"+strings.Join(parts[:i], "/"), nil); err != nil {
			return err
		}
	}
	if err := s.create(ctx, root, encodeRoot(CurrentRootInfo(time.Now()))); err != nil {
		return err
	}
	s.c.log.Info("created the root znode", "root", root, "layout", Layout)
	for _, p := range []string{LeasesPath(root), SlotsPath(root)} {
		if err := s.create(ctx, p, nil); err != nil {
			return err
		}
	}
	return nil
}

// create makes a persistent node; one that exists already is fine.
func (s *session) create(ctx context.Context, p string, data []byte) error {
	err := s.c.call(ctx, 0, func() error { _, err := s.conn.Create(p, data, 0, s.c.acl); return err })
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return fmt.Errorf("create %s: %w", p, err)
	}
	return nil
}
