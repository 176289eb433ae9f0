package tree

import (
	"crypto/rand"
	"encoding/hex"
)

// ProtectedPrefix is go-zookeeper's (and Curator's) prefix of a protected
// sequential node: _c_<32 hex guid>-. The guid finds a node whose create
// answer was lost.
const ProtectedPrefix = "_c_"

// guidLen is the length of a protected node's GUID (32 hex digits).
const guidLen = 32

// NewGUID is a fresh GUID for a protected node's name.
func NewGUID() string {
	var g [guidLen / 2]byte
	_, _ = rand.Read(g[:])
	return hex.EncodeToString(g[:])
}
