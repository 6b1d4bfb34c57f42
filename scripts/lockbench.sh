#!/usr/bin/env bash
# lockbench.sh — cmd/lockbench's lock workloads (uncontended, contended, mixed)
# against a fresh single-node lockd and a durable redis-server (appendonly yes,
# appendfsync always, no RDB), both on 127.0.0.1 in temporary directories, and
# a table of the results side by side with the ratio lockd/redis (for ops/s
# above 1 is lockd faster; for latencies above 1 is lockd slower). The runs go
# one at a time, so they never compete for the CPUs or the disk. Last, a
# contended run with FENCE against lockd checks that the fencing tokens of each
# name strictly increase; the script fails if one does not.
#
# It builds bin/lockd and bin/lockbench; it installs nothing (redis-server and
# redis-cli must be on PATH: `make deps` installs them).
# Environment:
#   LB_DURATION  how long each run lasts (default 10s; a Go duration)
#   LB_CLIENTS   clients, one connection each (default 50)
#   LB_PIPELINE  operations per round trip (default 1)
#   LB_NAMES     shared names of the contended workload (default 8)
#   LB_OUT       a directory to keep every run's full lockbench report in
set -euo pipefail
cd "$(dirname "$0")/.."

die() {
	echo "lockbench.sh: $*" >&2
	exit 1
}

positive() { # positive NAME VALUE
	[[ $2 =~ ^[1-9][0-9]*$ ]] || die "$1 must be a positive integer, got '$2'"
	echo "$2"
}

DURATION=${LB_DURATION:-10s}
[[ $DURATION =~ ^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$ ]] || die "LB_DURATION must be a Go duration such as 10s, got '$DURATION'"
CLIENTS=$(positive LB_CLIENTS "${LB_CLIENTS:-50}")
PIPELINE=$(positive LB_PIPELINE "${LB_PIPELINE:-1}")
NAMES=$(positive LB_NAMES "${LB_NAMES:-8}")
OUT=${LB_OUT:-}
START_TIMEOUT=30 # seconds for a server to answer PING
WORKLOADS=(uncontended contended mixed)

for tool in go redis-server redis-cli; do
	command -v "$tool" >/dev/null || die "$tool is not on PATH (redis-server, redis-cli: run 'make deps')"
done
mkdir -p bin
go build -o bin/lockd ./cmd/lockd
go build -o bin/lockbench ./cmd/lockbench

LOCKD_BIN=bin/lockd
work=$(mktemp -d "${TMPDIR:-/tmp}/lockbench.XXXXXX")
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

declare -A PORTS=() # server -> RESP port

# start_lb NAME: start_server, remembering the port per server.
start_lb() {
	start_server "$1"
	PORTS[$1]=$PORT
	echo "lockbench.sh: $1 on 127.0.0.1:$PORT" >&2
}

# lb SERVER WORKLOAD [ARGS...]: one lockbench run; its report goes to
# $work/SERVER-WORKLOAD.txt (and LB_OUT).
lb() {
	local server=$1 workload=$2 tag rc=0
	shift 2
	tag="$server-$workload${1:+-fenced}"
	echo "lockbench.sh: $workload against $server for $DURATION${1:+ ($*)}" >&2
	bin/lockbench -addr "127.0.0.1:${PORTS[$server]}" -workload "$workload" -duration "$DURATION" \
		-clients "$CLIENTS" -pipeline "$PIPELINE" -names "$NAMES" -quiet "$@" \
		>"$work/$tag.txt" 2>"$work/$tag.err" || rc=$?
	if [[ -n $OUT ]]; then
		mkdir -p "$OUT"
		cp "$work/$tag.txt" "$OUT/$tag.txt"
	fi
	if ((rc != 0)); then
		cat "$work/$tag.txt" "$work/$tag.err" >&2
		die "lockbench $workload against $server failed (exit $rc)"
	fi
}

start_lb redis
start_lb lockd
for w in "${WORKLOADS[@]}"; do
	lb redis "$w"
	lb lockd "$w"
done
lb lockd contended -fence

# The side-by-side table.
ratio() {
	awk -v l="$2" -v r="$1" 'BEGIN { if (r ~ /^[0-9.]+$/ && l ~ /^[0-9.]+$/ && r > 0) printf "%.2f", l / r; else print "-" }'
}
echo
echo "lockbench, $CLIENTS clients, pipeline $PIPELINE, $DURATION per run, contended on $NAMES names; redis-server: appendonly yes, appendfsync always"
echo "(mixed: 40% acquire, 40% release, 8% keepalive = compare-and-pexpire script, lockd has no sessions yet, 6% read, 6% try-lock on a taken lock)"
echo "(lockd/redis: above 1 means lockd is faster for ops/s, slower for latencies)"
printf '%-12s %-18s %12s %12s %12s\n' workload metric redis lockd lockd/redis
for w in "${WORKLOADS[@]}"; do
	r="$work/redis-$w.txt"
	l="$work/lockd-$w.txt"
	rows=("ops/s|workload|$w|ops/s" "grants|workload|$w|grants" "taken|workload|$w|taken"
		"errors|workload|$w|errors" "acquire p50 ms|op|acquire|p50_ms" "acquire p99 ms|op|acquire|p99_ms"
		"acquire p99.9 ms|op|acquire|p99.9_ms" "release p50 ms|op|release|p50_ms" "release p99 ms|op|release|p99_ms")
	if [[ $w == mixed ]]; then
		rows+=("keepalive p99 ms|op|keepalive|p99_ms")
	fi
	for spec in "${rows[@]}"; do
		IFS='|' read -r label table row col <<<"$spec"
		rv=$(field "$r" "$table" "$row" "$col")
		lv=$(field "$l" "$table" "$row" "$col")
		case $label in
		ops/s | acquire* | release* | keepalive*) ratio=$(ratio "$rv" "$lv") ;;
		*) ratio=- ;;
		esac
		printf '%-12s %-18s %12s %12s %12s\n' "$w" "$label" "$rv" "$lv" "$ratio"
	done
done

f="$work/lockd-contended-fenced.txt"
checked=$(awk '/^fencing:/ { print $2 }' "$f")
violations=$(field "$f" workload contended fence_violations)
echo
echo "lockd contended with FENCE: $(field "$f" workload contended grants) grants, ${checked:-?} tokens checked, $violations fencing violations (must be 0), $(field "$f" workload contended ops/s) ops/s"
[[ $violations == 0 ]] || die "fencing tokens did not strictly increase"
