#!/usr/bin/env bash
# bench.sh — redis-benchmark against lockd and against a durable redis-server
# (appendonly, appendfsync always), one after the other on 127.0.0.1, each fresh
# in a temporary directory, and a table of requests per second side by side.
#
# It installs nothing: `make bench` builds bin/lockd and installs redis first.
# Environment:
#   BENCH_N      requests per -t set,get run (default 100000; CI smoke: e.g. 2000)
#   BENCH_NX_N   requests of the SET k v NX PX 10000 run (default BENCH_N/5)
#   BENCH_C      parallel clients (default 50)
#   BENCH_P      pipeline depth of the pipelined runs (default 16)
#   LOCKD_BIN    the lockd binary (default bin/lockd)
# It fails if redis-benchmark exits non-zero or prints an error (error replies).
set -euo pipefail
cd "$(dirname "$0")/.."

die() {
	echo "bench: $*" >&2
	exit 1
}

positive() { # positive NAME VALUE
	[[ $2 =~ ^[1-9][0-9]*$ ]] || die "$1 must be a positive integer, got '$2'"
	echo "$2"
}

N=$(positive BENCH_N "${BENCH_N:-100000}")
NX_N=$(positive BENCH_NX_N "${BENCH_NX_N:-$((N / 5 > 0 ? N / 5 : 1))}")
C=$(positive BENCH_C "${BENCH_C:-50}")
P=$(positive BENCH_P "${BENCH_P:-16}")
LOCKD_BIN=${LOCKD_BIN:-bin/lockd}
START_TIMEOUT=30 # seconds for a server to answer PING
[[ -x $LOCKD_BIN ]] || die "$LOCKD_BIN is missing: run 'make build' (make bench does)"
for tool in redis-server redis-benchmark redis-cli; do
	command -v "$tool" >/dev/null || die "$tool is not on PATH: run 'make deps' (make bench does)"
done

work=$(mktemp -d "${TMPDIR:-/tmp}/lockd-bench.XXXXXX")
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"


declare -A RPS=()   # "server|test" -> requests per second
declare -A LISTED=() # tests already in TESTS
TESTS=()             # row order

# bench SERVER LABEL_SUFFIX ARGS...: one redis-benchmark run; records a rate per
# test it reports.
bench() {
	local server=$1 suffix=$2 out rc=0 line title rate
	shift 2
	out=$(redis-benchmark -h 127.0.0.1 -p "$PORT" -q "$@" 2>&1) || rc=$?
	out=$(tr '\r' '\n' <<<"$out")
	if ((rc != 0)) || grep -qE 'ERR|[Ee]rror' <<<"$out"; then
		grep -E 'ERR|[Ee]rror' <<<"$out" >&2 || true
		die "redis-benchmark $* against $server failed (exit $rc)"
	fi
	while IFS= read -r line; do
		# "SET: 12345.67 requests per second, p50=..." (the rate is "inf" when a
		# tiny run took under a millisecond)
		[[ $line =~ ^(.+):\ ([^ ]+)\ requests\ per\ second ]] || continue
		title="${BASH_REMATCH[1]}$suffix"
		rate=${BASH_REMATCH[2]}
		RPS["$server|$title"]=$rate
		if [[ -z ${LISTED["$title"]:-} ]]; then
			LISTED["$title"]=1
			TESTS+=("$title")
		fi
	done <<<"$out"
}

run_all() {
	local server=$1
	start_server "$server"
	echo "bench: $server on 127.0.0.1:$PORT" >&2
	bench "$server" "" -n "$N" -c "$C" -t set,get
	bench "$server" " -P $P" -n "$N" -c "$C" -P "$P" -t set,get
	bench "$server" "" -n "$NX_N" -c "$C" SET k v NX PX 10000
	stop "$SERVER_PID"
}

# One server at a time, so that they never compete for the CPUs or the disk.
run_all redis
run_all lockd

# Titles hold spaces: print the table with the test column first.
echo
echo "redis-benchmark -q -c $C, -n $N (SET NX PX: -n $NX_N); redis-server: appendonly yes, appendfsync always"
printf '%-26s %14s %14s %12s\n' test "redis rps" "lockd rps" "lockd/redis"
for title in "${TESTS[@]}"; do
	r=${RPS["redis|$title"]:-}
	l=${RPS["lockd|$title"]:-}
	[[ -n $r ]] || die "redis-benchmark reported no rate for '$title' against redis"
	[[ -n $l ]] || die "redis-benchmark reported no rate for '$title' against lockd"
	ratio=-
	if [[ $r =~ ^[0-9.]+$ && $l =~ ^[0-9.]+$ ]]; then
		ratio=$(awk -v l="$l" -v r="$r" 'BEGIN { if (r > 0) printf "%.2f", l / r; else print "-" }')
	fi
	printf '%-26s %14s %14s %12s\n' "$title" "$r" "$l" "$ratio"
done
