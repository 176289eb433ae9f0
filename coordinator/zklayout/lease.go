package zklayout

import (
	"encoding/json"
	"time"

	"github.com/snowfleet/snowfleet/snowflake"
)

// What holds a lease, as its lease node says (coordinator.Config.Kind,
// LeaseInfo.Kind).
const (
	// KindWorker is a snowflaked worker: it serves IDs at its lease node's
	// addr. A lease node without a kind (written before kinds) is one.
	KindWorker = "worker"
	// KindEmbedded is a Go program issuing IDs to itself from its own lease
	// (package coordinator/idlease): it serves nobody, so client discovery
	// and balancer configs leave it out.
	KindEmbedded = "embedded"
)

// LeaseKind is the kind a lease node publishes or was read with: "" is
// KindWorker, the only kind before kinds were written.
func LeaseKind(k string) string {
	if k == "" {
		return KindWorker
	}
	return k
}

// LeaseData is the JSON of a lease node, and of a standby node: the
// holder's addresses and identity, which LeaseInfo reports.
type LeaseData struct {
	Addr    string    `json:"addr"`
	HTTP    string    `json:"http"`
	Host    string    `json:"host"`
	PID     int       `json:"pid"`
	Version string    `json:"version"`
	Since   time.Time `json:"since"`
	// Kind is KindWorker or KindEmbedded ("" in a node written before
	// kinds: a worker); Program names the program holding the lease.
	Kind    string `json:"kind,omitempty"`
	Program string `json:"program,omitempty"`
}

// EncodeLease is the JSON a lease or standby node is written with.
func EncodeLease(d LeaseData) []byte {
	b, _ := json.MarshalIndent(d, "", "  ")
	return b
}

// LeaseInfo is one live lease node: which worker holds which slot.
type LeaseInfo struct {
	// Node is the lease node's name in leases/ (no parent path).
	Node string
	// Slot is the slot the node claims.
	Slot snowflake.Slot
	// Seq is the node's sequence number (see ParseLeaseName); the oldest per
	// slot (LeaseSeqBefore) holds it.
	Seq int64
	// Addr is the worker's ID service (host:port), HTTP its admin address.
	Addr, HTTP string
	// Host and PID identify the worker process.
	Host string
	PID  int
	// Version is the worker's build.
	Version string
	// Since is when the worker created the node.
	Since time.Time
	// Kind is what holds the lease: KindWorker (it serves IDs at Addr) or
	// KindEmbedded (a program issuing IDs to itself: route nothing to it).
	Kind string
	// Program names the program holding the lease ("" when not given).
	Program string
}

// Serves reports whether the lease's holder serves ID requests: a worker
// with an address. Client discovery and balancer configs take only these.
func (l LeaseInfo) Serves() bool { return l.Kind == KindWorker && l.Addr != "" }
