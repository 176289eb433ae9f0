package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/snowfleet/snowfleet/snowflake"
)

// Standbys make themselves visible, so that holders shorten their
// reservations only while it buys something: a waiting standby's takeover
// after a crash. Each standby has one ephemeral node under standby/, named
// for the range it waits for and its session:
//
//	/snowflake/standby/
//	  dc03-s0123456789abcdef   a standby pinned to datacenter 3
//	  any-s0123456789abcdef    a standby that takes any slot
//
// with JSON {addr, http, host, pid, version, since}, as a lease node. The
// name is fixed per session, so a create whose answer was lost and that
// lands later is our own node (ErrNodeExists), found and deleted by name,
// and it goes with the session in any case. standby/ itself is made by the
// first standby (it is advisory: a missing or refused node costs only the
// shortening, never an ID). Holders list standby/ at each renew.

// standbyRetry is how long a standby whose node could not be made waits
// before trying again (the failure is logged once per try).
const standbyRetry = 30 * time.Second

// StandbyPath is the parent of the standby nodes.
func StandbyPath(root string) string { return path.Join(root, "standby") }

// standbyAny is the name prefix of a standby that takes any slot.
const standbyAny = "any"

// standbyName is the node name of a standby of datacenter dc (-1: any) on
// session sid.
func standbyName(dc int, sid int64) string {
	rng := standbyAny
	if dc >= 0 {
		rng = fmt.Sprintf("dc%02d", dc)
	}
	return fmt.Sprintf("%s-s%016x", rng, uint64(sid))
}

// ParseStandbyName is the datacenter a standby node waits for, -1 for any
// slot.
func ParseStandbyName(name string) (int, error) {
	rng, _, ok := strings.Cut(name, "-s")
	if !ok {
		return 0, fmt.Errorf("standby node %q: want dcNN-s<session> or any-s<session>", name)
	}
	if rng == standbyAny {
		return -1, nil
	}
	if !strings.HasPrefix(rng, "dc") {
		return 0, fmt.Errorf("standby node %q: range %q is neither dcNN nor any", name, rng)
	}
	dc, err := strconv.Atoi(rng[2:])
	if err != nil || dc < 0 || dc > snowflake.MaxDatacenter {
		return 0, fmt.Errorf("standby node %q: datacenter %q is out of range 0..%d", name, rng[2:], snowflake.MaxDatacenter)
	}
	return dc, nil
}

// StandbyInfo is one waiting standby, for the slot map.
type StandbyInfo struct {
	// Node is the node's name in standby/.
	Node string `json:"node"`
	// Datacenter is the datacenter it waits for, -1 for any slot.
	Datacenter int `json:"datacenter"`
	// Addr, HTTP, Host, PID, Version and Since are as in its lease nodes.
	Addr    string    `json:"addr,omitempty"`
	HTTP    string    `json:"http,omitempty"`
	Host    string    `json:"host,omitempty"`
	PID     int       `json:"pid,omitempty"`
	Version string    `json:"version,omitempty"`
	Since   time.Time `json:"since"`
}

// readStandbys lists standby/ and reads each node; none when it is absent.
func readStandbys(conn *zk.Conn, root string) ([]StandbyInfo, error) {
	names, _, err := conn.Children(StandbyPath(root))
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", StandbyPath(root), err)
	}
	sort.Strings(names)
	out := make([]StandbyInfo, 0, len(names))
	for _, n := range names {
		dc, err := ParseStandbyName(n)
		if err != nil {
			continue // not ours
		}
		data, _, err := conn.Get(path.Join(StandbyPath(root), n))
		if errors.Is(err, zk.ErrNoNode) {
			continue // it took a slot meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("read standby %s: %w", n, err)
		}
		var d leaseData
		_ = json.Unmarshal(data, &d)
		out = append(out, StandbyInfo{Node: n, Datacenter: dc, Addr: d.Addr, HTTP: d.HTTP,
			Host: d.Host, PID: d.PID, Version: d.Version, Since: d.Since})
	}
	return out, nil
}

// standbyCounts reports whether a standby named in names could take a slot
// of datacenter dc: one pinned to dc, or one that takes any slot.
func standbyCounts(names []string, dc int) bool {
	for _, n := range names {
		if sdc, err := ParseStandbyName(n); err == nil && (sdc == -1 || sdc == dc) {
			return true
		}
	}
	return false
}

// showStandby makes our standby node, once per session; a failure (an ACL
// on the root, say) is logged and retried after standbyRetry: the worker
// stands by all the same, only holders keep their full horizon.
func (s *session) showStandby(ctx context.Context) {
	c := s.c
	sid := s.conn.SessionID()
	if sid == 0 || (s.standbyNode != "" && s.standbySession == sid) || time.Now().Before(s.standbyRetryAt) {
		return
	}
	dir := StandbyPath(c.cfg.Root)
	p := dir + "/" + standbyName(c.cfg.Datacenter, sid)
	data := encodeLease(leaseData{Addr: c.cfg.Advertise, HTTP: c.cfg.HTTPAdvertise, Host: hostname(),
		PID: os.Getpid(), Version: c.cfg.Version, Since: time.Now().UTC()})
	create := func() error {
		return c.call(ctx, 0, func() error {
			_, err := s.conn.Create(p, data, zk.FlagEphemeral, c.acl)
			return err
		})
	}
	err := create()
	if errors.Is(err, zk.ErrNoNode) {
		// The first standby of the root makes standby/ (persistent).
		err = c.call(ctx, 0, func() error {
			_, err := s.conn.Create(dir, nil, 0, c.acl)
			return err
		})
		if err == nil || errors.Is(err, zk.ErrNodeExists) {
			err = create()
		}
	}
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		s.standbyRetryAt = time.Now().Add(standbyRetry)
		c.log.Warn("cannot create our standby node; standing by unseen (holders keep their full horizon)",
			"path", p, "retry_in", standbyRetry, "error", err)
		return
	}
	s.standbyNode, s.standbySession = p, sid
}

// hideStandby deletes our standby node, once we hold a slot.
func (s *session) hideStandby(ctx context.Context) {
	if s.standbyNode == "" {
		return
	}
	if s.standbySession == s.conn.SessionID() {
		s.deletePath(ctx, s.standbyNode)
	}
	s.standbyNode, s.standbySession = "", 0
}

// listStandbys reads the names in standby/ into standbyNames, once a
// renew: a read of a node that is empty but while a standby waits. (Not a
// watch: every holder's armed watch would be re-set by go-zookeeper on each
// reconnect, and its v1.0.4 sendSetWatches races its receive loop.) On an
// error (ZooKeeper away) the last listing stands; none: no standby.
//
// The renew waits for the listing standbyListWait at most: against a slow
// ZooKeeper a listing bounded only by the call timeout, and then the write,
// made one renew cycle longer than the standby horizon lasts, and the
// clock passed the ceiling. A listing still out then is not sent again:
// the renew goes on with the last one, and a later renew takes its answer.
func (s *session) listStandbys(ctx context.Context) {
	if s.standbyList == nil {
		ch := make(chan standbyListing, 1)
		s.standbyList = ch
		go func() {
			var names []string
			err := s.c.call(ctx, 0, func() (err error) {
				names, _, err = s.conn.Children(StandbyPath(s.c.cfg.Root))
				return err
			})
			r := standbyListing{err: err}
			if err == nil {
				r.names = names // else possibly abandoned to the call: not to be read
			}
			ch <- r
		}()
	}
	t := time.NewTimer(s.c.cfg.standbyListWait())
	defer t.Stop()
	select {
	case r := <-s.standbyList:
		s.standbyList = nil
		switch {
		case errors.Is(r.err, zk.ErrNoNode):
			s.standbyNames = nil
		case r.err == nil:
			s.standbyNames = r.names
		}
	case <-t.C:
		s.c.log.Debug("listing of standby/ still out; renewing with the last one", "wait", s.c.cfg.standbyListWait())
	case <-ctx.Done():
	}
}

// standbyListing is the answer to a listing of standby/.
type standbyListing struct {
	names []string
	err   error
}

// horizonFor is the horizon a holder reserves with: StandbyHorizon while a
// standby waits for its range, else Horizon.
func (c *Coordinator) horizonFor(standbyWaiting bool) time.Duration {
	if standbyWaiting {
		return c.cfg.standbyHorizon()
	}
	return c.cfg.Horizon
}
