#!/bin/bash
# zkCli.sh [-server HOST:PORT] [COMMAND ARGS...]: ZooKeeper's own client,
# under the official image's name, on Debian's jars. Without a command it
# reads commands from stdin, one a line (the runbook pipes them in).
set -euo pipefail
exec java -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
	-cp "$ZOO_CONF_DIR:/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar" \
	org.apache.zookeeper.ZooKeeperMain "$@"
