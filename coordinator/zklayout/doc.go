// Package zklayout is the read-only side of a fleet's znode layout: where
// the nodes are (DefaultRoot, ValidRoot, LeasesPath, SlotsPath, SlotPath,
// LeasePrefix), what a lease node's name and JSON say (ParseLeaseName,
// LeaseSeqBefore, Holders, LeaseData, the kinds), and the live leases read
// from them (ReadLeases, WatchLeases, LeaseInfo, each lease node read once
// and only an ephemeral one counted: leasenodes.go). The layout as a whole,
// with the root and slot nodes' JSON, is package coordinator/tree; this
// package is what a reader needs, so the public client (worker/client)
// discovers workers without compiling the lease protocol.
//
// The files: paths.go (where the nodes are), config.go (ZKConfig: the
// servers, root and TLS every reader is given), leasename.go (a lease
// node's name, its sequence, the holder of each slot), lease.go (its JSON
// and kinds), leasenodes.go (the lease nodes read once each, ephemeral
// ones only), watch.go (ReadLeases and WatchLeases).
package zklayout
