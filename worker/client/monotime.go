package client

import _ "unsafe" // for go:linkname

// nanotime is the runtime's monotonic clock. The prefetch buffer reads a
// clock on every Next to keep stale IDs from being handed out, and
// time.Now, which reads the wall clock too, cost 2-4 times as much on
// this project's VMs (61 vs 20-30 ns): a third of Next's CPU. The runtime
// keeps nanotime open to linkname for such uses (go.dev/issue/67401).
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64
