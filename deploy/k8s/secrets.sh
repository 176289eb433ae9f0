#!/usr/bin/env bash
# secrets.sh [DIR] writes the files kustomization.yaml's secretGenerator
# makes the Secrets snowflake-client, snowflake-worker and snowflake-operator of (default DIR: secrets/ beside
# this script, which git ignores), each only when absent, mode 0600:
#   zk-operator   ZooKeeper digest identity operator:<64 hex>, owner of the tree (Secret snowflake-operator: the init Job only)
#   zk-worker     ZooKeeper digest identity worker:<64 hex>, what a worker may do (Secret snowflake-worker)
#   requirepass   the password clients AUTH with (64 hex) (Secret snowflake-client)
#   zk-superdigest  the operator's digest id, user:base64(sha1(user:password)), ZooKeeper's
#                 superDigest (Secret zookeeper-superdigest: the ZooKeeper pods), rewritten
#                 from zk-operator each run
# Nothing is shipped with a known password: kubectl apply -k fails until
# these exist. To rotate one, see ../security.md.
set -euo pipefail
dir=${1:-$(dirname "${BASH_SOURCE[0]}")/secrets}
umask 077
mkdir -p "$dir"
random() { head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
for f in zk-operator zk-worker requirepass; do
	[[ -s $dir/$f ]] && continue
	case $f in
	zk-*) printf '%s:%s\n' "${f#zk-}" "$(random)" >"$dir/$f.tmp" ;;
	*) printf '%s\n' "$(random)" >"$dir/$f.tmp" ;;
	esac
	mv "$dir/$f.tmp" "$dir/$f"
	echo "secrets.sh: wrote $dir/$f"
done
# As ZooKeeper's DigestAuthenticationProvider makes it (docker-compose.yml's
# secrets service writes the same).
op=$(tr -d '\n' <"$dir/zk-operator")
hex=$(printf %s "$op" | sha1sum | cut -c1-40)
printf '%s:%s\n' "${op%%:*}" "$(printf "$(printf %s "$hex" | sed 's/../\\x&/g')" | base64)" >"$dir/zk-superdigest.tmp"
mv "$dir/zk-superdigest.tmp" "$dir/zk-superdigest"
