#!/bin/sh
# migrate-from-redis.sh — move a running Redis's keys into lockd and cut over
# (docs/migration.md, steps 3 to 7): REPLICAOF, wait until lockd has caught
# up, CLIENT PAUSE WRITE on the source, wait for the last offset, REPLICAOF
# NO ONE. Each step is checked; the script stops with a message when one
# fails (and unpauses the source if it paused it). Pointing clients at lockd
# and CLIENT UNPAUSE are left to you: the source stays paused on success.
#
# usage: deploy/migrate-from-redis.sh SOURCE_HOST:PORT LOCKD_HOST:PORT [LOCKD_HOST:PORT ...]
#   Name every lockd node: the link runs on the leader of group 0, which may move.
# env:   SOURCE_AUTH (the source's password), LOCKD_AUTH (lockd's), TIMEOUT (seconds per
#        wait, default 600), PAUSE_MS (the source's write pause, default 60000)
set -eu

[ $# -ge 2 ] || { sed -n '2,14p' "$0" >&2; exit 2; }
src=$1
shift
timeout=${TIMEOUT:-600}
pause_ms=${PAUSE_MS:-60000}
paused=

die() {
	echo "migrate: $*" >&2
	if [ -n "$paused" ]; then
		redis_src CLIENT UNPAUSE >/dev/null 2>&1 || true
		echo "migrate: the source is unpaused again" >&2
	fi
	exit 1
}
redis_src() { REDISCLI_AUTH=${SOURCE_AUTH:-} redis-cli -h "${src%:*}" -p "${src##*:}" "$@"; }
redis_at() { a=$1; shift; REDISCLI_AUTH=${LOCKD_AUTH:-} redis-cli -h "${a%:*}" -p "${a##*:}" "$@"; }
field() { tr -d '\r' | sed -n "s/^$1://p"; }

# link_node prints the lockd node that runs the link (lockd_link_here:1), if any.
link_node() {
	for n in "$@"; do
		if [ "$(redis_at "$n" INFO replication 2>/dev/null | field lockd_link_here)" = 1 ]; then
			echo "$n"
			return 0
		fi
	done
	return 1
}

# wait_for DESC CMD... runs CMD every half second until it succeeds or TIMEOUT passes.
wait_for() {
	desc=$1
	shift
	end=$(($(date +%s) + timeout))
	until "$@"; do
		[ "$(date +%s)" -lt "$end" ] || die "timed out after ${timeout}s waiting for $desc"
		sleep 0.5
	done
}

caught_up() { # $1: "close" (within 1 MB) or "equal"; uses the node list in $nodes
	n=$(link_node $nodes) || return 1
	info=$(redis_at "$n" INFO replication)
	[ "$(echo "$info" | field master_link_status)" = up ] || return 1
	have=$(echo "$info" | field slave_repl_offset)
	want=$(redis_src INFO replication | field master_repl_offset)
	[ -n "$have" ] && [ -n "$want" ] || return 1
	if [ "$1" = equal ]; then [ "$have" = "$want" ]; else [ $((want - have)) -lt 1048576 ]; fi
}

nodes="$*"
redis_src PING | grep -q PONG || die "the source $src does not answer PING"
for n in $nodes; do
	redis_at "$n" PING | grep -q PONG || die "lockd node $n does not answer PING"
done

first=${nodes%% *}
reply=$(redis_at "$first" REPLICAOF "${src%:*}" "${src##*:}")
case $reply in OK*) ;; *) die "REPLICAOF on $first: $reply" ;; esac
echo "migrate: lockd follows $src; waiting until it has caught up"
wait_for "lockd to catch up with $src" caught_up close

reply=$(redis_src CLIENT PAUSE "$pause_ms" WRITE)
[ "$reply" = OK ] || die "CLIENT PAUSE on the source: $reply"
paused=yes
echo "migrate: the source's writes are paused for ${pause_ms} ms; waiting for the last offset"
timeout=$((pause_ms / 1000))
wait_for "lockd's slave_repl_offset to equal the source's master_repl_offset" caught_up equal

n=$(link_node $nodes) || die "no lockd node runs the link any more"
skipped=$(redis_at "$n" INFO replication | field lockd_skipped)
reply=$(redis_at "$n" REPLICAOF NO ONE)
[ "$reply" = OK ] || die "REPLICAOF NO ONE on $n: $reply"
paused=
echo "migrate: done — lockd is writable and holds the source's keys."
[ -z "$skipped" ] || echo "migrate: not imported (by reason, with counts): $skipped"
echo "migrate: now point your clients at lockd, then: redis-cli -h ${src%:*} -p ${src##*:} CLIENT UNPAUSE"
