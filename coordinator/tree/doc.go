// Package tree is the fleet's tree in ZooKeeper: the znode layout a fleet
// lives in and its codecs, the ACL scheme and the verdicts on it, the
// ensemble's fleet registry, the slot map, and the operator's verbs on
// the tree (init, repair, recover, secure). snowflakectl works on it
// through this package alone; the lease (package coordinator) reads and
// writes the same tree through it, and neither this package nor
// snowflakectl links the lease (TestDependencyDirection).
//
// The znode layout under the root (default /snowflake), and the fleet
// registry beside it:
//
//	/snowfleet-registry     persistent, the operator's (world r): one node per fleet
//	  %2Fsnowflake          JSON {root, layout, datacenters, max_horizon_ms, max_skew_ms};
//	                        the root's path escaped
//	/snowflake              persistent, JSON {layout, epoch_ms, bits, created,
//	                        datacenters, max_horizon_ms, max_skew_ms, recovery}
//	/snowflake/leases/      ephemeral sequential (protected) nodes, one a claim:
//	  _c_<guid>-dc07-m13-0000000042   JSON {addr, http, host, pid, version, since,
//	                                        kind (worker|embedded), program}
//	/snowflake/slots/       all 1,024 persistent slot nodes, made with the root:
//	  dc07-m13              JSON {reserved_until_ms, last_ms, holder, updated_ms, bound_ms}
//	/snowflake/standby/     made with the root; one ephemeral (protected) node
//	                        per waiting standby:
//	  _c_<guid>-dc07-s<session>  JSON {addr, http, host, pid, version, since, kind, program}
//
// Only snowflakectl init (InitRoot) makes a root, reserving its slot nodes
// past what an earlier incarnation could still issue. A missing slot node
// (or root, leases/, slots/), or one without a valid reservation, is
// damage: workers refuse it and never re-create it; snowflakectl repair
// does, with RepairSlots. After a restore from a backup, snowflakectl
// recover (RecoverRoot) raises every slot past what was issued since.
// With credentials the operator owns the tree, the workers may create and
// delete in leases/ and standby/ and write the slot nodes, the world reads
// (FleetACL); a worker refuses a tree the world may write, and snowflakectl
// secure (SecureTree) puts one right.
//
// The files (every one but this doc.go, which TestDocNamesEveryFile
// checks): layout.go (the layout names, the root's and the slot nodes' JSON
// and their codecs), history.go (the tenures a slot record keeps, and
// where an ID's timestamp falls in them), standby.go (the standby nodes' names and what they
// hold) and guid.go (the protected nodes' GUIDs), dcset.go (datacenter
// ranges), acl.go (FleetACL, the operator/worker/world ACL scheme, and what
// an ACL grants), registry.go (the fleet registry: ReadRegistry, Register,
// CheckRegistered), fleets.go (a registry's fleets and the overlaps between
// them), ensembleroot.go (CloseEnsembleRoot: ZooKeeper's / closed to the
// world's writes), slotmap.go (the read-only slot map for
// operators), slotmapview.go (SlotMapView: the map as /slots.json serves
// it and snowflakectl slots --json prints it), init.go (InitRoot), slotnodes.go (the slot nodes made in
// batched Multis, and RepairSlots), recover.go (RecoverRoot), secure.go
// (SecureTree), zktime.go (ZooKeeper's time, which repair and recover
// count a reservation from).
package tree
