package coordinator

import (
	"sync"

	"github.com/go-zookeeper/zk"
)

// mapSession is the ZooKeeper session the slot map is read on
// (Coordinator.ReadSlotMap, behind the admin port's /slots): a session of
// its own, not the lease's, so that a read's ~1,030 requests never queue
// beside the lease's renewals, whoever asks for the page and however
// often. It carries no credentials: the world reads the fleet's tree, and
// a session that can write nothing suits a page anyone may be shown.
// Dialled at the first read while Run runs, closed when Run returns.
type mapSession struct {
	mu     sync.Mutex
	conn   *zk.Conn
	closed bool
}

// get returns the session, dialling it with dial the first time; after
// close, ErrNoSession.
func (m *mapSession) get(dial func() (*zk.Conn, error)) (*zk.Conn, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrNoSession
	}
	if m.conn == nil {
		conn, err := dial()
		if err != nil {
			return nil, err
		}
		m.conn = conn
	}
	return m.conn, nil
}

// close closes the session, if one was dialled, for good.
func (m *mapSession) close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	if m.conn != nil {
		m.conn.Close()
		m.conn = nil
	}
}
