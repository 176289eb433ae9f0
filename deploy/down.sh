#!/usr/bin/env bash
# down.sh (make down): removes the fleet's containers, networks and volumes.
# The workers stop first, so that they release their slots while ZooKeeper is
# still there (it goes away with its volumes anyway; this keeps their logs clean).
set -euo pipefail
# shellcheck source=deploy/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
compose stop -t 10 worker
compose down -v --remove-orphans -t 10
