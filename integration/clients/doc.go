// Package clients proves the ID port with Redis client libraries that are
// not ours — redis-py, node-redis and redis-cli — drawing IDs through a real
// L4 balancer (HAProxy, TCP mode, health-checking each worker's /readyz)
// from a live fleet while workers are killed, paused and stopped. It also
// runs the client cookbook (worker/cookbook) that the docs print.
//
// It needs Debian's haproxy, python3-redis, node-redis and redis-tools
// (`make check` installs them). A missing one fails the test; go test
// -short or SNOWFLEET_SKIP_CLIENTS=1 skips it (integration/testenv).
package clients
