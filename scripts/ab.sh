#!/usr/bin/env bash
# ab.sh — `make bench-ab A=<lockd binary> B=<lockd binary>`: a change measured
# before and after. Each run starts a fresh 3-node cluster (-peers, 8 Raft
# groups, once every node leads its share) from one binary, the two
# alternating (A B A B ...) so that the machine's drift hits both alike, and
# takes three loads from cmd/lockbench, every command straight to its group's
# leader (-direct, as a cluster-aware client sends it):
#   uncontended  64 clients, LOCK.ACQUIRE → LOCK.RELEASE (cycles/s, p99)
#   hot name     16 waiters on one name with LOCK.ACQUIRE … WAIT (hand-overs/s)
#   one client   acquire p50 (ms)
# Prints every run, then each binary's means and B/A.
#
# Everything runs on 127.0.0.1 with its data in a temporary directory (put
# TMPDIR on tmpfs to take the disk out); on exit it stops the processes it
# started, and only those.
# Environment:
#   A, B            the two lockd binaries (required; build one per commit)
#   AB_ROUNDS       runs per binary (default 3)
#   BENCH_DURATION  each load's length, a Go duration (default 10s)
set -euo pipefail
cd "$(dirname "$0")/.."

die() {
	echo "ab.sh: $*" >&2
	exit 1
}

[[ -n ${A:-} && -n ${B:-} ]] || die "usage: make bench-ab A=<lockd binary> B=<lockd binary>"
for bin in "$A" "$B"; do
	[[ -x $bin ]] || die "$bin is not an executable file"
done
ROUNDS=${AB_ROUNDS:-3}
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "AB_ROUNDS must be a positive count, not '$ROUNDS'"
DURATION=${BENCH_DURATION:-10s}
START_TIMEOUT=30
command -v redis-cli >/dev/null || die "redis-cli is not on PATH (make deps)"
mkdir -p bin
go build -o bin/lockbench ./cmd/lockbench
work=$(mktemp -d "${TMPDIR:-/tmp}/lockd-ab.XXXXXX")
LOCKD_BIN=$A
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

# load NAME ARGS...: one lockbench run against ADDRS into $work/NAME.txt.
load() {
	local f="$work/$1.txt"
	shift
	bin/lockbench -addr "$ADDRS" -lock -direct -duration "$DURATION" -quiet "$@" >"$f" ||
		die "lockbench $* failed: $(cat "$f")"
	echo "$f"
}

declare -A SUM
printf '%-4s %-5s %12s %9s %14s %12s\n' run bin cycles/s acq_p99 hand-overs/s 1-client_p50 >&2
for ((r = 1; r <= ROUNDS; r++)); do
	for side in A B; do
		LOCKD_BIN=${!side}
		start_lockd_cluster 8
		u=$(load "u-$side-$r" -clients 64)
		h=$(load "h-$side-$r" -clients 16 -workload contended -names 1 -wait 4s)
		o=$(load "o-$side-$r" -clients 1)
		stop_system
		vals=("$(field "$u" workload uncontended grants/s)" "$(field "$u" op acquire p99_ms)"
			"$(field "$h" workload contended grants/s)" "$(field "$o" op acquire p50_ms)")
		printf '%-4s %-5s %12s %9s %14s %12s\n' "$r" "$side" "${vals[@]}" >&2
		for i in 0 1 2 3; do
			SUM[$side,$i]=$(awk -v s="${SUM[$side,$i]:-0}" -v v="${vals[i]}" 'BEGIN { print s + v }')
		done
	done
done

echo "ab.sh: A=$A B=$B, $ROUNDS runs each, $DURATION per load, fresh 3-node cluster per run"
printf '%-5s %12s %9s %14s %12s\n' bin cycles/s acq_p99 hand-overs/s 1-client_p50
mean() { awk -v s="${SUM[$1,$2]}" -v n="$ROUNDS" 'BEGIN { print s / n }'; }
for side in A B; do
	printf '%-5s %12.0f %9.3f %14.0f %12.3f\n' "$side" "$(mean "$side" 0)" "$(mean "$side" 1)" "$(mean "$side" 2)" "$(mean "$side" 3)"
done
ratios=()
for i in 0 1 2 3; do
	ratios+=("$(awk -v a="${SUM[A,$i]}" -v b="${SUM[B,$i]}" 'BEGIN { if (a > 0) printf "%.2f", b / a; else print "-" }')")
done
printf '%-5s %12s %9s %14s %12s\n' B/A "${ratios[@]}"
echo "(cycles/s and hand-overs/s: higher is better; p99 and p50 in ms: lower is better)"
