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

// ErrRootExists: InitRoot found the root made already, with other ranges.
var ErrRootExists = errors.New("root exists")

// InitResult is what InitRoot did.
type InitResult struct {
	// Made is false when the root existed already with the same ranges.
	Made bool
	// Layout is the root's layout.
	Layout string
	// Scan is the ensemble as found before making the root.
	Scan Scan
}

// InitRoot makes a fleet's root owning the datacenters owned, as a worker
// makes an absent root (the root and its two children in one Multi, then
// all 1,024 slot nodes reserved to our clock, then the final layout), but
// only after scanning the ensemble for other fleets (ScanFleets, at most
// scanLimit nodes, not entering the subtrees skip names) and refusing one
// that overlaps (ErrFleetOverlap) or a subtree it cannot read
// (ErrScanUnreadable). A root
// that owns all 32 datacenters is written as a v2 root, any other as v3.
// A root that exists with the same ranges is left alone (Made false);
// with others it is ErrRootExists. It is snowflakectl init.
func InitRoot(ctx context.Context, conn *zk.Conn, root string, acl []zk.ACL, owned DCSet, scanLimit int, skip ...string) (InitResult, error) {
	if !ValidRoot(root) {
		return InitResult{}, fmt.Errorf("init: root %q is not an absolute znode path", root)
	}
	if owned == 0 {
		return InitResult{}, fmt.Errorf("init: %w: a fleet must own at least one datacenter", ErrBadRanges)
	}
	type result struct {
		res InitResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := initRoot(conn, root, acl, owned, scanLimit, skip)
		done <- result{res, err}
	}()
	select {
	case r := <-done:
		return r.res, r.err
	case <-ctx.Done():
		return InitResult{}, fmt.Errorf("init: %w", ctx.Err())
	}
}

func initRoot(conn *zk.Conn, root string, acl []zk.ACL, owned DCSet, scanLimit int, skip []string) (InitResult, error) {
	var res InitResult
	data, st, err := conn.Get(root)
	exists := err == nil
	switch {
	case err == nil && len(strings.TrimSpace(string(data))) > 0:
		var info RootInfo
		if err := json.Unmarshal(data, &info); err != nil {
			return res, fmt.Errorf("init: %w: root %s holds no layout JSON (%v)", ErrLayoutMismatch, root, err)
		}
		if err := info.Compatible(); err != nil {
			return res, fmt.Errorf("init: root %s: %w", root, err)
		}
		have, _ := info.Owned()
		res.Layout = info.Layout
		if have != owned {
			return res, fmt.Errorf("init: %w: root %s owns datacenters %s, not %s; ranges are not changed in place", ErrRootExists, root, have, owned)
		}
		return res, nil
	case err != nil && !errors.Is(err, zk.ErrNoNode):
		return res, fmt.Errorf("init: read root %s: %w", root, err)
	case exists && st.NumChildren > 0:
		return res, fmt.Errorf("init: %w: root %s has children but no layout JSON: not made by snowfleet", ErrLayoutMismatch, root)
	}
	res.Scan, err = ScanFleets(conn, scanLimit, skip...)
	if err != nil {
		return res, fmt.Errorf("init: %w", err)
	}
	if err := CheckScope(root, owned, res.Scan); err != nil {
		return res, fmt.Errorf("init: %w", err)
	}
	partial := rootInfo(LayoutV1, time.Now())
	if owned != AllDatacenters {
		partial.Layout, partial.Datacenters = LayoutV3Partial, owned.String()
	}
	parts := strings.Split(strings.Trim(root, "/"), "/")
	for i := 1; i < len(parts); i++ {
		if _, err := conn.Create("/"+strings.Join(parts[:i], "/"), nil, 0, acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return res, fmt.Errorf("init: create %s: %w", "/"+strings.Join(parts[:i], "/"), err)
		}
	}
	var first any = &zk.CreateRequest{Path: root, Data: encodeRoot(partial), Acl: acl}
	version := int32(0)
	if exists { // an empty root (made to set its ACL first) counts as absent
		first = &zk.SetDataRequest{Path: root, Data: encodeRoot(partial), Version: st.Version}
		version = st.Version + 1
	}
	if _, err := conn.Multi(first, &zk.CreateRequest{Path: LeasesPath(root), Acl: acl},
		&zk.CreateRequest{Path: SlotsPath(root), Acl: acl}); err != nil {
		return res, fmt.Errorf("init: create root %s: %w", root, err)
	}
	now := time.Now().UnixMilli()
	if _, err := createSlotNodes(conn, root, acl, nil, SlotRecord{ReservedUntilMs: now, UpdatedMs: now}); err != nil {
		return res, fmt.Errorf("init: make the slot nodes of root %s: %w", root, err)
	}
	final := partial
	final.Layout = partial.finished()
	if _, err := conn.Set(root, encodeRoot(final), version); err != nil {
		return res, fmt.Errorf("init: write layout %s into root %s: %w", final.Layout, root, err)
	}
	res.Made, res.Layout = true, final.Layout
	// Two inits racing in one ensemble both pass the scan above; the
	// second look finds the pair (and their workers refuse to start).
	again, err := ScanFleets(conn, scanLimit, skip...)
	if err != nil {
		return res, fmt.Errorf("init: made root %s, but the check after: %w", root, err)
	}
	if err := CheckScope(root, owned, again); err != nil {
		return res, fmt.Errorf("init: made root %s, but another fleet appeared meanwhile: %w", root, err)
	}
	return res, nil
}
