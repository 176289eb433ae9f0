package tree

import (
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/snowfleet/snowfleet/coordinator/zklayout"
)

// zkTime is ZooKeeper's time now, in Unix ms: the mtime of a write to
// slots/, which holds no data (writing none stamps it) and which nobody
// watches. A holder's reservation follows the leader's clock within its
// max skew, and an operator's clock may run behind it, so a reservation
// meant to pass every holder's is counted from this time.
func zkTime(conn *zk.Conn, root string) (int64, error) {
	st, err := conn.Set(zklayout.SlotsPath(root), nil, -1)
	if err != nil {
		return 0, fmt.Errorf("stamp %s: %w", zklayout.SlotsPath(root), err)
	}
	return st.Mtime, nil
}
