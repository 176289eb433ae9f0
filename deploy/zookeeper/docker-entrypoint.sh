#!/bin/bash
# Writes zoo.cfg and myid from the environment the way the official zookeeper
# image does (same variable names, same defaults where it has them), then
# runs the command. An existing zoo.cfg (a mounted one) is left alone.
set -euo pipefail

cfg="$ZOO_CONF_DIR/zoo.cfg"
if [[ ! -f $cfg ]]; then
	{
		echo "dataDir=$ZOO_DATA_DIR"
		echo "dataLogDir=$ZOO_DATA_LOG_DIR"
		echo "tickTime=$ZOO_TICK_TIME"
		echo "initLimit=$ZOO_INIT_LIMIT"
		echo "syncLimit=$ZOO_SYNC_LIMIT"
		echo "autopurge.snapRetainCount=$ZOO_AUTOPURGE_SNAPRETAINCOUNT"
		echo "autopurge.purgeInterval=$ZOO_AUTOPURGE_PURGEINTERVAL"
		echo "maxClientCnxns=$ZOO_MAX_CLIENT_CNXNS"
		echo "standaloneEnabled=$ZOO_STANDALONE_ENABLED"
		echo "admin.enableServer=$ZOO_ADMINSERVER_ENABLED"
		# Ours only (the official image takes these through ZOO_CFG_EXTRA).
		[[ -n ${ZOO_MIN_SESSION_TIMEOUT:-} ]] && echo "minSessionTimeout=$ZOO_MIN_SESSION_TIMEOUT"
		[[ -n ${ZOO_MAX_SESSION_TIMEOUT:-} ]] && echo "maxSessionTimeout=$ZOO_MAX_SESSION_TIMEOUT"
		for server in ${ZOO_SERVERS:-server.1=localhost:2888:3888;2181}; do
			echo "$server"
		done
		[[ -n ${ZOO_4LW_COMMANDS_WHITELIST:-} ]] && echo "4lw.commands.whitelist=$ZOO_4LW_COMMANDS_WHITELIST"
		for extra in ${ZOO_CFG_EXTRA:-}; do
			echo "$extra"
		done
		true
	} >"$cfg"
fi
if [[ ! -f $ZOO_DATA_DIR/myid ]]; then
	echo "${ZOO_MY_ID:-1}" >"$ZOO_DATA_DIR/myid"
fi
exec "$@"
