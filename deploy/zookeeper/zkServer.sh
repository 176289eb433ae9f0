#!/bin/bash
# zkServer.sh start-foreground: the one verb of the official image's CMD,
# running Debian's ZooKeeper jars with slf4j-simple logging to stderr.
set -euo pipefail
case ${1:-start-foreground} in
start-foreground) ;;
*) echo "zkServer.sh: only start-foreground is supported, got '$1'" >&2; exit 2 ;;
esac
cp="$ZOO_CONF_DIR:/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar"
# The Netty parts zookeeper.jar's manifest leaves out, which the Netty
# connection factory (secureClientPort, TLS) needs.
for jar in netty-codec netty-resolver; do
	[[ -f /usr/share/java/$jar.jar ]] && cp="$cp:/usr/share/java/$jar.jar"
done
# shellcheck disable=SC2086
exec java ${JVMFLAGS:-} ${SERVER_JVMFLAGS:-} \
	-Dorg.slf4j.simpleLogger.defaultLogLevel="${ZOO_LOG_LEVEL,,}" \
	-Dorg.slf4j.simpleLogger.showDateTime=true \
	-Dorg.slf4j.simpleLogger.dateTimeFormat="yyyy-MM-dd'T'HH:mm:ss.SSSZ" \
	-Dorg.slf4j.simpleLogger.log.org.apache.zookeeper.server.NIOServerCnxn=warn \
	-Dzookeeper.admin.enableServer="$ZOO_ADMINSERVER_ENABLED" \
	-cp "$cp" org.apache.zookeeper.server.quorum.QuorumPeerMain "$ZOO_CONF_DIR/zoo.cfg"
