//go:build integration

// Package integration runs the whole fleet in Docker — a three-node
// ZooKeeper ensemble and scalable snowflaked workers from the compose file —
// injects faults (scaling, kill -9, pause, a partition from ZooKeeper, the
// ZooKeeper leader's death, a lost quorum, clocks behind, rolling restarts),
// and checks after each that no ID repeated, IDs of a slot only grew in each
// client's order, one holder per slot, and the fleet served again in time.
//
//	go test -tags integration -count=1 -timeout 50m -v ./integration/
//
// It needs Docker and docker-compose (or docker compose) and builds the
// images it lacks with deploy/build-images.sh. Without Docker it fails;
// SNOWFLEET_SKIP_DOCKER=1 skips it instead, except under CI=true.
package integration
