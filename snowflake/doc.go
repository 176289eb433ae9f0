// Package snowflake is the 63-bit Snowflake ID format of snowfleet and the
// lock-free generator that issues IDs for one (datacenter, machine) slot.
//
// Layout, from the most significant bit:
//
//	bit 63      0 (sign)
//	bits 62..22 timestamp: ms since Epoch (41 bits, lasts until 2080-07-10)
//	bits 21..17 datacenter 0..31
//	bits 16..12 machine    0..31
//	bits 11..0  sequence   0..4095
//
// The generator never issues a timestamp above a ceiling that its owner (the
// coordinator) confirmed in ZooKeeper, and never one at or below a floor, which
// is how successive holders of a slot get disjoint timestamp intervals.
package snowflake
