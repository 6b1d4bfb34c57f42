#!/usr/bin/env bash
# ab.sh — `make bench-ab A=<lockd binary> B=<lockd binary>`: a change measured
# before and after. Each run starts a fresh 3-node cluster (-peers, 8 Raft
# groups or AB_GROUPS, once every group has its preferred leader) from one binary, or with
# AB_NODES=1 a fresh single node, the two binaries alternating (A B B A A B
# ...) so that the machine's drift hits both alike and each runs as often
# first in a round as second (in 8 of 10 A-then-B pairs of two builds whose
# uncontended path was the same, the first made more uncontended cycles/s),
# and takes three loads from
# cmd/lockbench, on a cluster every command straight to its group's leader
# (-direct, as a cluster-aware client sends it):
#   uncontended  64 clients, LOCK.ACQUIRE → LOCK.RELEASE (cycles/s, p99, and
#                the servers' CPU: µs per operation, all nodes together, and
#                that CPU over the load generator's own, which runs the same
#                code against either binary and so tracks the machine's speed:
#                the steadier of the two on a machine whose speed drifts)
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
#   AB_NODES        3 (default): a 3-node cluster per run; 1: a single node
#   AB_GROUPS       a cluster's Raft groups (default 8; 1: one group, as etcd)
#   AB_DIRECT       1 (default): a cluster's clients straight to the leaders
#                   (-direct); 0: spread over the three nodes, client i on node
#                   i mod 3, which forward what they do not lead
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
NODES=${AB_NODES:-3}
[[ $NODES == 1 || $NODES == 3 ]] || die "AB_NODES must be 1 or 3, not '$NODES'"
GROUPS_N=${AB_GROUPS:-8}
AB_DIRECT=${AB_DIRECT:-1}
[[ $AB_DIRECT == 0 || $AB_DIRECT == 1 ]] || die "AB_DIRECT must be 0 or 1, not '$AB_DIRECT'"
[[ $GROUPS_N =~ ^[1-9][0-9]*$ ]] || die "AB_GROUPS must be a positive count, not '$GROUPS_N'"
DURATION=${BENCH_DURATION:-10s}
START_TIMEOUT=30
command -v redis-cli >/dev/null || die "redis-cli is not on PATH (make deps)"
mkdir -p bin
go build -o bin/lockbench ./cmd/lockbench
work=$(mktemp -d "${TMPDIR:-/tmp}/lockd-ab.XXXXXX")
LOCKD_BIN=$A
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

# start_nodes: a fresh system of LOCKD_BIN in the shape AB_NODES asks for;
# sets ADDRS and SYSTEM_PIDS (stop_system stops it).
if [[ $NODES == 3 ]]; then
	DIRECT=(-direct)
	SHAPE="fresh 3-node cluster of $GROUPS_N group(s) per run"
	if [[ $AB_DIRECT == 0 ]]; then
		DIRECT=()
		SHAPE="$SHAPE, clients spread over the nodes"
	fi
	start_nodes() { start_lockd_cluster "$GROUPS_N"; }
else
	DIRECT=()
	SHAPE="fresh single node per run"
	start_nodes() {
		start_server lockd
		ADDRS=127.0.0.1:$PORT
		SYSTEM_PIDS=("$SERVER_PID")
	}
fi

# load NAME ARGS...: one lockbench run against ADDRS into $work/NAME.txt; the
# CPU ticks the servers (SYSTEM_PIDS) and the load generator used meanwhile go
# into $work/NAME.txt.cpu.
load() {
	local f="$work/$1.txt" s0 gen
	shift
	s0=$(ticks "${SYSTEM_PIDS[@]}")
	# the generator's CPU: its parent shell's children's ticks once it exited
	gen=$(bash -c '"$@" >"$0" || exit 1; awk "{ print \$16 + \$17 }" /proc/$$/stat' "$f" \
		bin/lockbench -addr "$ADDRS" -lock ${DIRECT[@]+"${DIRECT[@]}"} -duration "$DURATION" -quiet "$@") ||
		die "lockbench $* failed: $(cat "$f")"
	echo "$(($(ticks "${SYSTEM_PIDS[@]}") - s0)) $gen" >"$f.cpu"
	echo "$f"
}

# cpu FILE: the servers' CPU per operation (µs) and over the generator's, of a load.
cpu() {
	local ops
	ops=$(field "$1" workload uncontended ops)
	awk -v ops="$ops" -v tick="$TICK" '{ if (ops > 0 && $2 > 0) printf "%.1f %.2f", $1 * 1e6 / tick / ops, $1 / $2; else print "0 0" }' "$1.cpu"
}

declare -A SUM
FMT='%-4s %-5s %12s %9s %10s %8s %14s %12s\n'
# shellcheck disable=SC2059
printf "$FMT" run bin cycles/s acq_p99 cpu/op_us srv/gen hand-overs/s 1-client_p50 >&2
for ((r = 1; r <= ROUNDS; r++)); do
	order=(A B)
	((r % 2 == 0)) && order=(B A) # each binary as often first as second
	for side in "${order[@]}"; do
		LOCKD_BIN=${!side}
		start_nodes
		u=$(load "u-$side-$r" -clients 64)
		h=$(load "h-$side-$r" -clients 16 -workload contended -names 1 -wait 4s)
		o=$(load "o-$side-$r" -clients 1)
		stop_system
		read -r cpuop srvgen <<<"$(cpu "$u")"
		vals=("$(field "$u" workload uncontended grants/s)" "$(field "$u" op acquire p99_ms)" "$cpuop" "$srvgen"
			"$(field "$h" workload contended grants/s)" "$(field "$o" op acquire p50_ms)")
		# shellcheck disable=SC2059
		printf "$FMT" "$r" "$side" "${vals[@]}" >&2
		for i in 0 1 2 3 4 5; do
			SUM[$side,$i]=$(awk -v s="${SUM[$side,$i]:-0}" -v v="${vals[i]}" 'BEGIN { print s + v }')
		done
	done
done

echo "ab.sh: A=$A B=$B, $ROUNDS runs each, $DURATION per load, $SHAPE"
printf '%-5s %12s %9s %10s %8s %14s %12s\n' bin cycles/s acq_p99 cpu/op_us srv/gen hand-overs/s 1-client_p50
mean() { awk -v s="${SUM[$1,$2]}" -v n="$ROUNDS" 'BEGIN { print s / n }'; }
for side in A B; do
	printf '%-5s %12.0f %9.3f %10.1f %8.2f %14.0f %12.3f\n' "$side" "$(mean "$side" 0)" "$(mean "$side" 1)" \
		"$(mean "$side" 2)" "$(mean "$side" 3)" "$(mean "$side" 4)" "$(mean "$side" 5)"
done
ratios=()
for i in 0 1 2 3 4 5; do
	ratios+=("$(awk -v a="${SUM[A,$i]}" -v b="${SUM[B,$i]}" 'BEGIN { if (a > 0) printf "%.2f", b / a; else print "-" }')")
done
printf '%-5s %12s %9s %10s %8s %14s %12s\n' B/A "${ratios[@]}"
echo "(cycles/s and hand-overs/s: higher is better; p99 and p50 in ms, CPU per operation and the"
echo " servers' CPU over the load generator's: lower is better)"
