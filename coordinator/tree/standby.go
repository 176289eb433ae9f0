package tree

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/snowflake"
)

// A standby is a worker waiting for a slot while every slot it may take is
// held. Each has one ephemeral node under standby/, named as a protected
// node (as lease nodes are) for the range it waits for and the session it
// was made on:
//
//	/snowflake/standby/
//	  _c_<guid>-dc03-s0123456789abcdef   a standby pinned to datacenter 3
//	  _c_<guid>-any-s0123456789abcdef    a standby that takes any slot
//
// with JSON {addr, http, host, pid, version, since}, as a lease node.
// (Builds before the GUID named them dc03-s<session> and any-s<session>;
// both are read.) How holders and standbys use these nodes is the lease's
// (coordinator/standby.go).

// StandbyPath is the parent of the standby nodes.
func StandbyPath(root string) string { return path.Join(root, "standby") }

// standbyAny is the name prefix of a standby that takes any slot.
const standbyAny = "any"

// StandbyName is the node name of a standby of datacenter dc (-1: any) on
// session sid, made by the create of guid.
func StandbyName(guid string, dc int, sid int64) string {
	rng := standbyAny
	if dc >= 0 {
		rng = fmt.Sprintf("dc%02d", dc)
	}
	return fmt.Sprintf("%s%s-%s-s%016x", ProtectedPrefix, guid, rng, uint64(sid))
}

// ParseStandbyName is the datacenter a standby node waits for, -1 for any
// slot.
func ParseStandbyName(name string) (int, error) {
	dc, _, _, err := ParseStandby(name)
	return dc, err
}

// ParseStandby splits a standby node's name: the datacenter it waits for
// (-1: any), the GUID of its create ("" in a name without one) and the
// session it was made on.
func ParseStandby(name string) (dc int, guid string, sid int64, err error) {
	rest := name
	if strings.HasPrefix(rest, ProtectedPrefix) {
		g := strings.TrimPrefix(rest, ProtectedPrefix)
		if len(g) <= guidLen || g[guidLen] != '-' {
			return 0, "", 0, fmt.Errorf("standby node %q: want %s<guid>-dcNN-s<session> or %s<guid>-any-s<session>", name, ProtectedPrefix, ProtectedPrefix)
		}
		guid, rest = g[:guidLen], g[guidLen+1:]
	}
	rng, sess, ok := strings.Cut(rest, "-s")
	if !ok {
		return 0, "", 0, fmt.Errorf("standby node %q: want %s<guid>-dcNN-s<session> or %s<guid>-any-s<session>", name, ProtectedPrefix, ProtectedPrefix)
	}
	u, err := strconv.ParseUint(sess, 16, 64)
	if err != nil {
		return 0, "", 0, fmt.Errorf("standby node %q: session %q is not hex", name, sess)
	}
	if rng == standbyAny {
		return -1, guid, int64(u), nil
	}
	if !strings.HasPrefix(rng, "dc") {
		return 0, "", 0, fmt.Errorf("standby node %q: range %q is neither dcNN nor any", name, rng)
	}
	dc, err = strconv.Atoi(rng[2:])
	if err != nil || dc < 0 || dc > snowflake.MaxDatacenter {
		return 0, "", 0, fmt.Errorf("standby node %q: datacenter %q is out of range 0..%d", name, rng[2:], snowflake.MaxDatacenter)
	}
	return dc, guid, int64(u), nil
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
	// Kind and Program are as in its lease nodes.
	Kind    string `json:"kind"`
	Program string `json:"program,omitempty"`
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
		var d zklayout.LeaseData
		_ = json.Unmarshal(data, &d)
		out = append(out, StandbyInfo{Node: n, Datacenter: dc, Addr: d.Addr, HTTP: d.HTTP,
			Host: d.Host, PID: d.PID, Version: d.Version, Since: d.Since, Kind: zklayout.LeaseKind(d.Kind), Program: d.Program})
	}
	return out, nil
}
