package coordinator

import (
	"errors"
	"testing"

	"github.com/go-zookeeper/zk"
)

// classifyFenced sorts the replies a real ZooKeeper gives to the fenced
// Multi, and a reply without the slot node's Stat (fewer than two results,
// or a SetData result without a Stat) is unknown, never OK: the callers take
// the new version from that Stat.
func TestClassifyFencedReply(t *testing.T) {
	zs := startZK(t)
	obs := observer(t, zs.Addr())
	acl := zk.WorldACL(zk.PermAll)
	for _, p := range []string{"/f", "/f/lease", "/f/slot"} {
		if _, err := obs.Create(p, nil, 0, acl); err != nil {
			t.Fatal(err)
		}
	}
	check := &zk.CheckVersionRequest{Path: "/f/lease", Version: -1}
	set := &zk.SetDataRequest{Path: "/f/slot", Data: []byte("{}"), Version: 0}
	multi := func(ops ...any) ([]zk.MultiResponse, error) { return obs.Multi(ops...) }

	resp, err := multi(check, set)
	st, res, _ := classifyFenced(resp, err, set)
	if res != writeOK || st == nil || st.Version != 1 {
		t.Fatalf("a landed write: %v, stat %+v (reply %+v, %v)", res, st, resp, err)
	}
	resp, err = multi(check, set) // version 0 is stale now
	if _, res, _ = classifyFenced(resp, err, set); res != writeConflict {
		t.Errorf("bad version: %v (reply %+v, %v), want conflict", res, resp, err)
	}
	create := &zk.CreateRequest{Path: "/f/new", Data: nil, Acl: acl}
	resp, err = multi(check, create)
	if _, res, _ = classifyFenced(resp, err, create); res != writeOK {
		t.Errorf("a fenced create: %v (reply %+v, %v), want OK", res, resp, err)
	}
	gone := &zk.SetDataRequest{Path: "/f/vanished", Version: 0}
	resp, err = multi(check, gone)
	if _, res, _ = classifyFenced(resp, err, gone); res != writeNoSlot {
		t.Errorf("slot node vanished: %v (reply %+v, %v), want no-slot (damage, never re-created)", res, resp, err)
	}
	if err := obs.Delete("/f/lease", -1); err != nil {
		t.Fatal(err)
	}
	set.Version = 1
	resp, err = multi(check, set)
	if _, res, _ = classifyFenced(resp, err, set); res != writeLeaseGone {
		t.Errorf("lease node gone: %v (reply %+v, %v), want lease gone", res, resp, err)
	}

	// Replies no ZooKeeper should send, which the caller must not take as
	// a confirmed write: one result only, none, or a SetData without Stat.
	for name, r := range map[string][]zk.MultiResponse{
		"one result":     {{}},
		"no result":      nil,
		"no stat in set": {{}, {}},
	} {
		st, res, err := classifyFenced(r, nil, set)
		if res != writeUnknown || st != nil || err == nil || errors.Is(err, zk.ErrNoNode) {
			t.Errorf("%s: %v, stat %+v, err %v; want unknown with an error saying why", name, res, st, err)
		}
	}
}

// Only the slot's ACL refuses a fenced write (ErrNoAuth, ErrInvalidACL);
// any other error the server answers with — the codes go-zookeeper does not
// know come back as "unknown error: <code>", and ErrAuthFailed concerns the
// session, not the slot — is a server error, the lease kept.
func TestClassifyFencedServerErrors(t *testing.T) {
	set := &zk.SetDataRequest{Path: "/f/slot", Version: 1}
	for _, c := range []struct {
		err  error
		want writeResult
	}{
		{zk.ErrNoAuth, writeFailed},
		{zk.ErrInvalidACL, writeFailed},
		{zk.ErrAuthFailed, writeServerError},
		{errors.New("unknown error: -125"), writeServerError}, // QUOTAEXCEEDED
		{errors.New("unknown error: -127"), writeServerError}, // THROTTLEDOP
		{zk.ErrBadArguments, writeServerError},
	} {
		resp := []zk.MultiResponse{{}, {Error: c.err}}
		_, res, err := classifyFenced(resp, c.err, set)
		if res != c.want || !errors.Is(err, c.err) {
			t.Errorf("%v: %v (%v), want %v wrapping it", c.err, res, err, c.want)
		}
	}
}
