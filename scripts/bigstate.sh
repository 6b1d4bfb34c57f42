#!/usr/bin/env bash
# bigstate.sh — `make bench-memory`: issue 9's memory and restart targets on a
# 3-node cluster. It fills a fresh 3-node lockd cluster (its default group
# count) with N held locks (LOCK.ACQUIRE lock:<i> owner-<i> PX 3600000, sent
# with redis-cli --pipe), reports each node's RSS right after the fill and
# the largest node's over BIG_WINDOW seconds from BIG_SETTLE seconds later
# (and each node's anonymous and file-backed RSS at the end of that window),
# then kills one node (kill -9), restarts it and
# times how long until it serves from its own state again (every group applied
# what was committed before the kill), with that node's RSS once it has
# recovered (no load garbage, no GC headroom from the fill); then the same
# after a clean stop (which snapshots first). BIG_DEBUG=1 shows the restart's progress. The
# reference is a redis-server (appendonly yes, appendfsync always) filled with
# N keys with TTLs (SET lock:<i> owner-<i> PX 3600000), its RSS after the fill.
#
# Everything runs on 127.0.0.1 with its data in a temporary directory; on exit
# it stops the processes it started, and only those.
# Environment:
#   BIG_LOCKS   the number of locks (default 1000000)
#   BIG_SETTLE  seconds after the fill at which RSS is read again (default 20)
#   BIG_WINDOW  seconds from then on over which it is read every second (default 20)
set -euo pipefail
cd "$(dirname "$0")/.."

die() {
	echo "bigstate.sh: $*" >&2
	exit 1
}

N=${BIG_LOCKS:-1000000}
[[ $N =~ ^[1-9][0-9]*$ ]] || die "BIG_LOCKS must be a positive integer, got '$N'"
START_TIMEOUT=120
SETTLE=${BIG_SETTLE:-20}
[[ $SETTLE =~ ^[0-9]+$ ]] || die "BIG_SETTLE must be whole seconds, got '$SETTLE'"
WINDOW=${BIG_WINDOW:-20}
[[ $WINDOW =~ ^[1-9][0-9]*$ ]] || die "BIG_WINDOW must be a positive number of seconds, got '$WINDOW'"
LOCKD_BIN=bin/lockd
for tool in go redis-server redis-cli; do
	command -v "$tool" >/dev/null || die "$tool is not on PATH (make deps)"
done
mkdir -p bin
go build -o bin/lockd ./cmd/lockd
work=$(mktemp -d "${TMPDIR:-/tmp}/lockd-bigstate.XXXXXX")
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

rss_mib() { awk '/^VmRSS:/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }

# fill PORT CMD: N commands "CMD lock:<i> owner-<i> …" through redis-cli --pipe.
fill() {
	local port=$1 cmd=$2
	awk -v n="$N" -v cmd="$cmd" 'BEGIN {
		for (i = 0; i < n; i++) {
			k = "lock:" i; o = "owner-" i
			if (cmd == "set") printf "*5\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n$2\r\nPX\r\n$7\r\n3600000\r\n", length(k), k, length(o), o
			else printf "*5\r\n$12\r\nLOCK.ACQUIRE\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n$2\r\nPX\r\n$7\r\n3600000\r\n", length(k), k, length(o), o
		}
	}' | redis-cli -p "$port" --pipe >"$work/fill-$port.txt" 2>&1 || die "filling port $port failed (redis-cli: $(tail -3 "$work/fill-$port.txt"))"
	grep -q "errors: 0" "$work/fill-$port.txt" || die "filling port $port had errors: $(tail -3 "$work/fill-$port.txt")"
}

# Redis, the reference.
start_server redis
fill "$PORT" set
redis_rss=$(rss_mib "$SERVER_PID")
redis_keys=$(redis-cli -p "$PORT" DBSIZE)
stop "$SERVER_PID"
echo "bigstate.sh: redis-server with $redis_keys keys: RSS $redis_rss MiB" >&2

# The lockd cluster.
start_lockd_cluster
IFS=, read -r -a addrs <<<"$ADDRS"
lead_port=${addrs[0]##*:}
start=$SECONDS
fill "$lead_port" lock
fill_s=$((SECONDS - start))
keys=$(redis-cli -p "$lead_port" DBSIZE)
[[ $keys == "$N" ]] || die "the cluster holds $keys keys after the fill, want $N"
rss=()
for pid in "${SYSTEM_PIDS[@]}"; do rss+=("$(rss_mib "$pid")"); done
echo "bigstate.sh: lockd 3 nodes with $keys locks (filled in ${fill_s}s): RSS ${rss[*]} MiB" >&2
# Settled: the same nodes once the load has been over for SETTLE seconds (a
# quiet lockd hands the collector's headroom back to the OS, memtrim), read
# every second for WINDOW seconds: an idle node's RSS still moves (garbage
# builds up between trims), so one reading could flatter it or not. Each
# reading keeps the largest node's RSS; the median and the maximum are
# reported.
sleep "$SETTLE"
window=()
for ((t = 0; t < WINDOW; t++)); do
	largest=0
	for pid in "${SYSTEM_PIDS[@]}"; do
		largest=$(awk -v a="$largest" -v b="$(rss_mib "$pid")" 'BEGIN { print (b > a ? b : a) }')
	done
	window+=("$largest")
	sleep 1
done
mapfile -t window < <(printf '%s\n' "${window[@]}" | sort -n)
med_settled=${window[$((${#window[@]} / 2))]}
max_settled=${window[-1]}
echo "bigstate.sh: the largest node ${SETTLE}-$((SETTLE + WINDOW))s after the fill: RSS median $med_settled, max $max_settled MiB" >&2
# What the RSS is made of at the end of the window: anonymous memory (Go's
# heap, stacks, runtime) and mapped files (the binary, badger's tables).
parts=()
for pid in "${SYSTEM_PIDS[@]}"; do
	parts+=("$(awk '/^RssAnon:/ { a = $2 } /^RssFile:/ { f = $2 } END { printf "%.1f anon + %.1f file", a / 1024, f / 1024 }' "/proc/$pid/status")")
done
echo "bigstate.sh: each node's RSS at the end of the window, MiB: ${parts[0]}; ${parts[1]}; ${parts[2]}" >&2

# applied PORT: the sum over the node's groups of their applied index (INFO
# raft's raft_group_N lines; 0 while it does not answer).
applied() {
	timeout 5 redis-cli -p "$1" INFO raft 2>/dev/null | tr ',' '\n' | awk -F= '$1 == "applied_index" { s += $2 } END { print s + 0 }'
}

# restart_node HOW: stop the last node started (TERM: a clean stop, which snapshots,
# waited for up to a minute; KILL: kill -9) and start it again with the same
# arguments; sets RESTART_S to the seconds until it answers reads of the
# first and last lock.
restart_node() {
	local how=$1 i=2 j pid port t0 args deadline
	pid=${SYSTEM_PIDS[i]}
	mapfile -d '' -t args <"/proc/$pid/cmdline"
	port=""
	for ((j = 0; j + 1 < ${#args[@]}; j++)); do
		[[ ${args[j]} == -addr ]] && port=${args[j + 1]##*:}
	done
	[[ -n $port ]] || die "no -addr in the node's arguments: ${args[*]}"
	local want
	want=$(applied "${addrs[0]##*:}")
	kill "-$how" "$pid"
	for ((deadline = SECONDS + 60; SECONDS < deadline; )); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	stop "$pid"
	t0=$(date +%s.%N)
	"${args[@]}" >>"$work/restart-$how.log" 2>&1 &
	pids+=("$!")
	SYSTEM_PIDS[i]=$!
	# Serving again means serving from its own state: every group applied
	# at least what the cluster had committed before the stop (a follower
	# that forwards answers reads long before that).
	for ((deadline = SECONDS + START_TIMEOUT; SECONDS < deadline; )); do
		[[ -n ${BIG_DEBUG:-} ]] && echo "restart: applied $(applied "$port") want $want rss $(rss_mib "${SYSTEM_PIDS[i]}")" >&2
		if [[ $(applied "$port") -ge $want ]] && [[ $(timeout 5 redis-cli -p "$port" EXISTS "lock:$((N - 1))" 2>/dev/null) == 1 ]]; then
			RESTART_S=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
			return 0
		fi
		sleep 0.1
	done
	die "the restarted node did not serve within ${START_TIMEOUT}s: $(tail -3 "$work/restart-$how.log")"
}
# A crash first, so that the node restarts from whatever its groups had
# snapshotted by then (a clean stop snapshots first, which would flatter it).
restart_node KILL
killed=$RESTART_S
echo "bigstate.sh: a follower killed (-9) and restarted serves again after ${killed}s" >&2
sleep 5 # the restarted node returns its restore's garbage to the OS a second after it
after=$(rss_mib "${SYSTEM_PIDS[2]}")
restart_node TERM
clean=$RESTART_S
echo "bigstate.sh: a follower stopped cleanly and restarted serves again after ${clean}s" >&2

max_rss=$(printf '%s\n' "${rss[@]}" | sort -n | tail -1)
printf '\n%-40s %12s\n' "" "RSS MiB"
printf '%-40s %12s\n' "redis-server, $N keys with TTLs" "$redis_rss"
printf '%-40s %12s\n' "lockd node (largest of 3), $N locks" "$max_rss"
printf '%-40s %12s\n' "  the same, ${SETTLE}-$((SETTLE + WINDOW))s after: median" "$med_settled"
printf '%-40s %12s\n' "                                     max" "$max_settled"
printf '%-40s %12s\n' "lockd node restarted after kill -9" "$after"
awk -v l="$max_rss" -v m="$med_settled" -v s="$max_settled" -v w="$SETTLE-$((SETTLE + WINDOW))" -v a="$after" -v r="$redis_rss" -v n="$N" 'BEGIN {
	printf "lockd/redis: %.2f right after the fill (largest node, %.0f B per lock); %ss after it %.2f median (%.0f B per lock), %.2f max; %.2f after a restart (%.0f B per lock); target <= 2\n",
		l / r, l * 1048576 / n, w, m / r, m * 1048576 / n, s / r, a / r, a * 1048576 / n }'
echo "restart to serving: ${clean}s after a clean stop, ${killed}s after kill -9 (target <= 10s)"
