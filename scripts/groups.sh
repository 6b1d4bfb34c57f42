#!/usr/bin/env bash
# groups.sh — `make bench-groups`: what sharding buys or costs on this machine.
# The same 3-node lockd cluster, started fresh with -groups 1 and then with
# -groups 8 (leaders spread: the run starts once every group has its preferred leader),
# takes the same closed-loop load from cmd/lockbench: uncontended
# LOCK.ACQUIRE → LOCK.RELEASE cycles, clients spread over the three nodes
# (client i on node i mod 3). Prints cycles/s, acquire latency and the
# servers' CPU per operation (utime+stime of the three nodes over the run's
# ops) per group count and client count, and the ratio to the first count.
#
# Everything runs on 127.0.0.1 with its data in a temporary directory; on exit
# it stops the processes it started, and only those.
# Environment:
#   BENCH_DURATION  each run's length, a Go duration (default 10s)
#   BENCH_CLIENTS   the client counts (default "16 64")
#   BENCH_GROUPS    the group counts (default "1 3 8": one group, lockd's
#                   default of one per node, and 8)
set -euo pipefail
cd "$(dirname "$0")/.."

die() {
	echo "groups.sh: $*" >&2
	exit 1
}

DURATION=${BENCH_DURATION:-10s}
read -r -a CLIENTS <<<"${BENCH_CLIENTS:-16 64}"
read -r -a GROUPS_LIST <<<"${BENCH_GROUPS:-1 3 8}"
START_TIMEOUT=30
LOCKD_BIN=bin/lockd
command -v redis-cli >/dev/null || die "redis-cli is not on PATH (make deps)"
mkdir -p bin
go build -o bin/lockd ./cmd/lockd
go build -o bin/lockbench ./cmd/lockbench
work=$(mktemp -d "${TMPDIR:-/tmp}/lockd-groups.XXXXXX")
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

declare -A CYCLES P50 P99 ERRS CPU
for g in "${GROUPS_LIST[@]}"; do
	for c in "${CLIENTS[@]}"; do
		start_lockd_cluster "$g"
		f="$work/report-$g-$c.txt"
		t0=$(ticks "${SYSTEM_PIDS[@]}")
		bin/lockbench -addr "$ADDRS" -lock -clients "$c" \
			-duration "$DURATION" -quiet >"$f" || die "lockbench failed: $(cat "$f")"
		t1=$(ticks "${SYSTEM_PIDS[@]}")
		ops=$(field "$f" workload uncontended ops)
		CPU[$g,$c]=$(cpu_per_op $((t1 - t0)) "$ops" 1)
		CYCLES[$g,$c]=$(field "$f" workload uncontended grants/s)
		P50[$g,$c]=$(field "$f" op acquire p50_ms)
		P99[$g,$c]=$(field "$f" op acquire p99_ms)
		ERRS[$g,$c]=$(field "$f" workload uncontended errors)
		stop_system
		echo "groups.sh: groups $g, $c clients: ${CYCLES[$g,$c]} cycles/s, acquire p50 ${P50[$g,$c]} ms, p99 ${P99[$g,$c]} ms, ${CPU[$g,$c]} cpu_us/op, ${ERRS[$g,$c]} errors" >&2
	done
done

base=${GROUPS_LIST[0]}
printf '%-7s %-8s %10s %9s %9s %10s %7s %s\n' groups clients cycles/s acq_p50 acq_p99 cpu_us/op errors "/$base-group"
for g in "${GROUPS_LIST[@]}"; do
	for c in "${CLIENTS[@]}"; do
		ratio=$(awk -v a="${CYCLES[$g,$c]}" -v b="${CYCLES[$base,$c]}" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')
		printf '%-7s %-8s %10s %9s %9s %10s %7s %s\n' "$g" "$c" "${CYCLES[$g,$c]}" "${P50[$g,$c]}" "${P99[$g,$c]}" "${CPU[$g,$c]}" "${ERRS[$g,$c]}" "$ratio"
	done
done
echo "(one machine: the three nodes share its cores and disk; on separate machines each leader has its own)"
