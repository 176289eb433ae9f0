// Package fleettest runs real snowflaked workers for tests: it builds
// cmd/snowflaked once per test binary and starts processes of it against a
// ZooKeeper (usually integration/zktest), on free loopback ports. Tests of
// clients and tools run against these, never against a fake worker. Only a
// test binary may use it (testenv.TestOnly).
package fleettest
