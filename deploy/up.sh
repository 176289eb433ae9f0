#!/usr/bin/env bash
# up.sh (make up): builds the images that are missing (the worker image only
# then, or with REBUILD=1; the ZooKeeper and Prometheus images also when their
# inputs changed), starts a three-node
# ZooKeeper ensemble and WORKERS (default 3) workers, waits until every
# container is healthy, then prints the slot map and a few IDs. The ZooKeeper
# identities (operator, worker) are generated into the project's volumes at
# the first start and kept until make down (deploy/security.md).
# Env: WORKERS, REBUILD=1 (rebuild the worker image), COMPOSE_PROJECT_NAME
# (default snowfleet), ZK_IMAGE, WORKER_IMAGE, UP_TIMEOUT (seconds, default 120).
set -euo pipefail
# shellcheck source=deploy/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

WORKERS=${WORKERS:-3}
UP_TIMEOUT=${UP_TIMEOUT:-120}
start=$SECONDS

# The ZooKeeper image is always asked for: build-images.sh skips it when its
# inputs are unchanged.
build=(zookeeper prometheus)
if [[ ${REBUILD:-} == 1 ]] || ! image_exists "$WORKER_IMAGE"; then build=(worker "${build[@]}"); fi
"$SNOWFLEET_ROOT/deploy/build-images.sh" "${build[@]}"

# wait_healthy waits until every container of the services is healthy.
wait_healthy() { # service...
	local deadline=$((SECONDS + UP_TIMEOUT)) ids id status bad
	while :; do
		ids=$(compose ps -q "$@")
		bad=()
		for id in $ids; do
			status=$(docker inspect -f '{{if .State.Health}}{{.State.Health.Status}}{{else}}{{.State.Status}}{{end}}' "$id")
			[[ $status == healthy ]] || bad+=("${id:0:12}:$status")
		done
		if [[ -n $ids && ${#bad[@]} == 0 ]]; then return 0; fi
		if ((SECONDS > deadline)); then
			log "not healthy after ${UP_TIMEOUT}s: ${bad[*]}"
			compose logs --tail=30 "$@" >&2
			return 1
		fi
		sleep 0.5
	done
}

# An ensemble this script makes now is new: no worker ever served on it, so
# init may skip waiting out what an earlier fleet could still issue.
new_fleet=false
[[ -n $(compose ps -q zk1 2>/dev/null) ]] || new_fleet=true
log "starting ZooKeeper (zk1 zk2 zk3, image $ZK_IMAGE)"
compose up -d zk1 zk2 zk3
wait_healthy zk1 zk2 zk3
# Run here, not left to depends_on: init and the workers start with --no-deps.
log "ZooKeeper identities (operator, worker): generated if absent"
compose run --rm -T --no-deps secrets
log "making the fleet's root (snowflakectl init --new-fleet=$new_fleet, as the operator identity)"
SNOWFLAKE_NEW_FLEET=$new_fleet compose run --rm -T --no-deps init
log "ZooKeeper has a quorum; starting $WORKERS workers (image $WORKER_IMAGE)"
compose up -d --no-deps --scale "worker=$WORKERS" worker
wait_healthy worker
log "fleet up in $((SECONDS - start))s; starting Prometheus (image $PROMETHEUS_IMAGE)"
compose up -d --no-deps prometheus

# The tools run inside the worker containers (docker exec: quicker than
# compose exec): they are on the ZooKeeper network and need nothing on the
# host; they read the tree, which the world may read, as the worker identity
# (SNOWFLAKE_ZK_AUTH_FILE in the container).
mapfile -t workers < <(docker ps --filter "label=com.docker.compose.project=$COMPOSE_PROJECT_NAME" \
	--filter label=com.docker.compose.service=worker --format '{{.Label "com.docker.compose.container-number"}} {{.ID}}' | sort -n | cut -d' ' -f2)
ctl() { docker exec "${workers[0]}" /snowflakectl "$@"; }

echo
echo "== containers"
compose ps
echo
echo "== slot map (snowflakectl slots)"
ctl slots --zk zk1:2181,zk2:2181,zk3:2181 || log "snowflakectl slots failed"
echo
echo "== IDs from each worker (snowflakectl next --decode)"
for id in "${workers[@]}"; do
	port=$(docker port "$id" 7609/tcp | sed 's/.*://')
	echo "$(docker inspect -f '{{.Name}}' "$id" | tr -d /), published on 127.0.0.1:$port:"
	docker exec "$id" /snowflakectl next --addr 127.0.0.1:7609 -n 2 --decode | sed 's/^/  /'
done
echo
echo "== IDs through discovery (snowflakectl next --zk: lease nodes name <hostname>:7609)"
ctl next --zk zk1:2181,zk2:2181,zk3:2181 -n 4 --decode | sed 's/^/  /'
echo
echo
echo "== Prometheus (dns_sd_configs on the worker service, alert rules loaded)"
prom=127.0.0.1:$(compose port prometheus 9090 | sed 's/.*://')
up=0
for _ in $(seq 40); do
	up=$(curl -fs "http://$prom/api/v1/query?query=sum(up%7Bjob%3D%22snowflaked%22%7D)" | sed -n 's/.*"value":\[[^,]*,"\([0-9]*\)".*/\1/p')
	[[ ${up:-0} -ge $WORKERS ]] && break
	sleep 0.5
done
echo "  http://$prom: ${up:-0} of $WORKERS workers up; rules: http://$prom/rules, alerts: http://$prom/alerts"
echo
echo "From the host:  redis-cli -p $port NEXTID; redis-cli -p $port DECODE \$(redis-cli -p $port NEXTID)"
echo "Scale:          docker-compose -p $COMPOSE_PROJECT_NAME up -d --no-deps --scale worker=5 worker"
echo "Operator tools: docker-compose -p $COMPOSE_PROJECT_NAME run --rm -T init slots --zk zk1:2181 (as the operator identity; deploy/security.md)"
echo "Tear down:      make down"
