//go:build mutant

package coordinator

import (
	"context"
	"errors"

	"github.com/go-zookeeper/zk"
)

// bareSet is the bareset mutant's slot write: a plain Set at any version,
// without the Multi that checks our lease node, so a holder that lost its
// lease (or whose slot another holder wrote) still overwrites the slot.
func (s *session) bareSet(ctx context.Context, path string, data []byte) (*zk.Stat, writeResult, error) {
	var st *zk.Stat
	err := s.c.call(ctx, 0, func() (err error) { st, err = s.conn.Set(path, data, -1); return })
	switch {
	case err == nil:
		return st, writeOK, nil
	case unknownOutcome(err):
		return nil, writeUnknown, err
	case errors.Is(err, zk.ErrNoNode):
		return nil, writeNoSlot, err
	}
	return nil, writeFailed, err
}
