//go:build !mutant

package coordinator

import (
	"context"

	"github.com/go-zookeeper/zk"
)

// bareSet exists only for the bareset mutant (mutant_mutant.go); its one
// caller is guarded by mutant.Is, constant false here, so this is dead code.
func (*session) bareSet(context.Context, string, []byte) (*zk.Stat, writeResult, error) {
	return nil, writeFailed, nil
}
