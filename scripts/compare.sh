#!/usr/bin/env bash
# compare.sh — `make bench`: the same lock workloads, through cmd/lockbench,
# against a single-node lockd, 3-node lockd clusters, a durable redis-server
# (appendonly yes, appendfsync always) and a 3-member etcd cluster (Debian's
# etcd-server), at 1, 16 and 64 clients: one table of throughput, latency, the
# servers' CPU per operation and the ratios lockd/Redis and lockd/etcd; a
# second table of pipelined redis-benchmark SET and GET against the single node
# and Redis; then issue 9's and issue 50's targets. The same, with the run's
# date, commit and machine, is the Markdown page docs/bench/latest.md
# (BENCH_TABLE), which docs/benchmarks.md links to.
#
# Everything runs on 127.0.0.1 with its data in a temporary directory on disk.
# All systems are started first and stay up; each cell (workload, clients)
# then measures them one after the other, so that a shared machine's changing
# load skews no system against another, with the others paused (SIGSTOP):
# idle is not free (an idle 3-node lockd of 8 groups, its heartbeats and
# commit-index appends, used about 0.3 of the two cores, idle etcd 0.05), and
# every other system's runs paid for it. A system is resumed (SIGCONT) just
# before its runs and measured once it serves again: PING, or an agreed
# leader, and for a lockd cluster every group led by its preferred leader (its
# leaders lost their leases while it was stopped). On exit, normal or not, it
# stops every process it started, and only those, and removes the directory.
#
# Workloads (each an acquire→release cycle per grant, closed loop, one
# connection per client; a cluster's clients are spread over its nodes, client
# i on node i mod 3, the leader first, so that one client talks to the leader):
#   uncontended  every client locks names of its own. RESP: SET name owner NX
#                PX 10000, release by a compare-and-delete script (EVALSHA);
#                the lockd-N-lock rows: LOCK.ACQUIRE name owner PX 10000 and
#                LOCK.RELEASE name token, lockd's lock records.
#                etcd-txn: Txn If CreateRevision==0 Then Put with the client's
#                lease, release by Txn If CreateRevision==token Then Delete.
#                etcd-mutex: concurrency.Mutex Lock/Unlock.
#   hot-key      every client wants one name. SET NX and etcd-txn try once and
#                retry at once when it is taken (polling); lockd-N-lock
#                (LOCK.ACQUIRE … WAIT 4000) and etcd-mutex wait their turn in the
#                name's queue. cycles/s is then the hand-overs per second.
# cpu_us/op: the CPU time (utime + stime, /proc/PID/stat) that the system's
# server processes (every node or member) used during the run, in
# microseconds, over the run's ops (every reply); the load generator's CPU is
# not counted. Pipelined: redis-benchmark -q --csv -n 200000 (BENCH_QUICK:
# 50000) -c 50 -P 16, -t set then -t get, against lockd-1 and redis, with the
# server's CPU per request the same way.
#
# It installs etcd-server and etcd-client with apt when etcd is missing; it
# builds bin/lockd and bin/lockbench (redis-server, redis-cli and
# redis-benchmark: `make deps`).
# Environment:
#   BENCH_QUICK     1: 1s per run (a smoke test) instead of 8s, and 50000
#                   pipelined requests instead of 200000
#   BENCH_DURATION  each run's length, a Go duration (overrides BENCH_QUICK)
#   BENCH_CLIENTS   the client counts (default "1 16 64")
#   BENCH_SYSTEMS   a subset of "lockd-1 lockd-3 lockd-3g1 lockd-3g8 lockd-3g1e
#                   lockd-3g8e redis etcd-3"
#                   (default all)
#   BENCH_OUT       a directory to keep every run's lockbench and
#                   redis-benchmark report in
#   BENCH_TABLE     where to write the run's tables as a Markdown page, with its
#                   date, commit, machine and settings (default
#                   docs/bench/latest.md, relative to the repository root,
#                   which docs/benchmarks.md links to; written at the end of a
#                   run that finished, through a temporary file and mv; empty
#                   or "-": none). A run narrowed by BENCH_SYSTEMS or
#                   BENCH_CLIENTS, or shortened, says so at its top.
#   LOCKD_GROUPS    the lockd-3 cluster's Raft groups (passed as -groups);
#                   unset, lockd-3 runs lockd's default for a -peers cluster,
#                   and the page says the count its nodes report (INFO raft)
#
# lockd-3g1 and lockd-3g8 are two more 3-node clusters, with -groups 1 (the
# shape of the etcd cluster: one consensus group over three members) and
# -groups 8. Both run the uncontended workload, LOCK.* through any node and
# straight to the leaders; lockd-3g1 also runs the hot name, straight to the
# leader only (the name lives in one group either way; with one group no
# other group's traffic shares the node's log and peer links). lockd-3g1e and
# lockd-3g8e are the same two shapes with every group on the node-wide Raft
# engine (lockd -engine), uncontended only.
set -euo pipefail
cd "$(dirname "$0")/.."

die() {
	echo "compare.sh: $*" >&2
	exit 1
}

# make bench's full run: every system, these client counts, this long a run.
ALL_CLIENTS="1 16 64" ALL_SYSTEMS="lockd-1 lockd-3 lockd-3g1 lockd-3g8 lockd-3g1e lockd-3g8e redis etcd-3" FULL_DURATION=8s
case ${BENCH_QUICK:-0} in
0 | "") DURATION=$FULL_DURATION PIPE_N=200000 ;;
*) DURATION=1s PIPE_N=50000 ;;
esac
PIPE_C=50 PIPE_P=16 # the pipelined redis-benchmark runs: -c, -P (and -n PIPE_N)
DURATION=${BENCH_DURATION:-$DURATION}
[[ $DURATION =~ ^([0-9]+(\.[0-9]+)?(ms|s|m))+$ ]] || die "BENCH_DURATION must be a Go duration such as 10s, got '$DURATION'"
read -r -a CLIENTS <<<"${BENCH_CLIENTS:-$ALL_CLIENTS}"
read -r -a SYSTEMS <<<"${BENCH_SYSTEMS:-$ALL_SYSTEMS}"
((${#CLIENTS[@]} > 0)) || die "BENCH_CLIENTS is empty"
for c in "${CLIENTS[@]}"; do
	[[ $c =~ ^[1-9][0-9]*$ ]] || die "BENCH_CLIENTS must hold positive integers, got '$c'"
done
for s in "${SYSTEMS[@]}"; do
	case $s in lockd-1 | lockd-3 | lockd-3g1 | lockd-3g8 | lockd-3g1e | lockd-3g8e | redis | etcd-3) ;; *) die "BENCH_SYSTEMS: unknown system '$s'" ;; esac
done
OUT=${BENCH_OUT:-}
# The Markdown page this run writes at its end; its directory is made now, so
# that a path that cannot be written fails the run before it starts.
TABLE=${BENCH_TABLE-docs/bench/latest.md}
[[ $TABLE == - ]] && TABLE=""
if [[ -n $TABLE ]]; then
	mkdir -p "$(dirname "$TABLE")" || die "BENCH_TABLE: cannot make the directory of '$TABLE'"
	[[ -w $(dirname "$TABLE") ]] || die "BENCH_TABLE: cannot write into the directory of '$TABLE'"
fi
START_TIMEOUT=30 # seconds for a server or a cluster to serve
WORKLOADS=(uncontended hot-key)

has() { # has SYSTEM: whether BENCH_SYSTEMS names it
	local s
	for s in "${SYSTEMS[@]}"; do [[ $s == "$1" ]] && return 0; done
	return 1
}

for tool in go redis-server redis-cli; do
	command -v "$tool" >/dev/null || die "$tool is not on PATH (redis-server, redis-cli: run 'make deps')"
done
if { has lockd-1 || has redis; } && ! command -v redis-benchmark >/dev/null; then
	die "redis-benchmark is not on PATH (the pipelined rows; run 'make deps')"
fi
if has etcd-3 && ! { command -v etcd >/dev/null && command -v etcdctl >/dev/null; }; then
	echo "compare.sh: installing etcd-server and etcd-client" >&2
	SUDO=$([ "$(id -u)" = 0 ] || echo sudo)
	if ! { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq etcd-server etcd-client >/dev/null; }; then
		die "could not install etcd-server"
	fi
fi
mkdir -p bin
go build -o bin/lockd ./cmd/lockd
go build -o bin/lockbench ./cmd/lockbench

LOCKD_BIN=bin/lockd
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo "?")
RUN_START=$(date -u '+%Y-%m-%d %H:%M UTC')
# The commit measured (what was just built), "+dirty" when tracked files
# differ from it (other than this script's own output in docs/bench/).
COMMIT=$(git rev-parse --short HEAD 2>/dev/null) || COMMIT=""
if [[ -n $COMMIT && -n $(git status --porcelain --untracked-files=no -- . ':(exclude)docs/bench' 2>/dev/null) ]]; then
	COMMIT+="+dirty"
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/lockd-compare.XXXXXX")
# shellcheck source=scripts/lib.sh
. scripts/lib.sh # (the cd above: relative to the repository root)

start_system() {
	case $1 in
	lockd-1 | redis)
		start_server "${1%-1}"
		SYSTEM_PIDS=("$SERVER_PID")
		ADDRS=127.0.0.1:$PORT
		;;
	lockd-3) start_lockd_cluster "${LOCKD_GROUPS:-}" ;; # lockd's default unless LOCKD_GROUPS
	lockd-3g1) start_lockd_cluster 1 ;;
	lockd-3g8) start_lockd_cluster 8 ;;
	lockd-3g1e) LOCKD_ENGINE=1 start_lockd_cluster 1 ;;
	lockd-3g8e) LOCKD_ENGINE=1 start_lockd_cluster 8 ;;
	etcd-3) start_etcd_cluster ;;
	esac
	if [[ $1 == lockd-3* ]]; then
		GROUPS_OF[$1]=$(raft_groups "${ADDRS%%,*}")
		echo "compare.sh: $1 on $ADDRS, Raft groups: ${GROUPS_OF[$1]}" >&2
	else
		echo "compare.sh: $1 on $ADDRS" >&2
	fi
}

declare -A GROUPS_OF=() # a lockd cluster -> the Raft groups its first node reports

# raft_groups HOST:PORT: the Raft groups the lockd node there reports (INFO
# raft, raft_groups), "?" when it does not say.
raft_groups() {
	local g
	g=$(info_raft "$1" | sed -n 's/^raft_groups://p')
	echo "${g:-?}"
}

# start_etcd_cluster: three etcd members, a new cluster in $work; sets ADDRS
# and SYSTEM_PIDS. Retried when a port was taken meanwhile.
start_etcd_cluster() {
	local attempt i dir initial ports cp pp
	for attempt in 1 2 3; do
		mapfile -t ports < <(free_ports 6)
		cp=("${ports[@]:0:3}") pp=("${ports[@]:3:3}")
		initial="e1=http://127.0.0.1:${pp[0]},e2=http://127.0.0.1:${pp[1]},e3=http://127.0.0.1:${pp[2]}"
		dir="$work/etcd-3-$attempt"
		SYSTEM_PIDS=()
		for i in 0 1 2; do
			mkdir -p "$dir"
			etcd --name "e$((i + 1))" --data-dir "$dir/e$((i + 1))" \
				--listen-client-urls "http://127.0.0.1:${cp[i]}" --advertise-client-urls "http://127.0.0.1:${cp[i]}" \
				--listen-peer-urls "http://127.0.0.1:${pp[i]}" --initial-advertise-peer-urls "http://127.0.0.1:${pp[i]}" \
				--initial-cluster "$initial" --initial-cluster-state new --initial-cluster-token "lockd-compare-$attempt" \
				--logger zap --log-level warn >"$dir/e$((i + 1)).log" 2>&1 &
			pids+=("$!")
			SYSTEM_PIDS+=("$!")
		done
		if ADDRS=$(etcd_leader_first "127.0.0.1:${cp[0]}" "127.0.0.1:${cp[1]}" "127.0.0.1:${cp[2]}"); then
			return 0
		fi
		stop_system
		echo "compare.sh: the etcd cluster did not start (attempt $attempt); its logs:" >&2
		tail -n 5 "$dir"/e*.log >&2
	done
	die "the etcd cluster did not start"
}

# etcd_leader_first ADDR...: waits (START_TIMEOUT) until the etcd members at
# ADDR... (running: SYSTEM_PIDS, or the paused system just resumed) agree on a
# leader and prints ADDR... as a list with the leader first.
etcd_leader_first() {
	local eps status idx deadline=$((SECONDS + START_TIMEOUT)) pid
	eps=$(IFS=,; echo "$*")
	while ((SECONDS < deadline)); do
		for pid in ${SYSTEM_PIDS[@]+"${SYSTEM_PIDS[@]}"}; do
			kill -0 "$pid" 2>/dev/null || return 1
		done
		# endpoint status -w simple: "addr, id, version, db size, is leader, ..."
		status=$(etcdctl --endpoints "$eps" --command-timeout 2s endpoint status -w simple 2>/dev/null) || status=""
		if [[ $(grep -c . <<<"$status") == "$#" ]]; then
			idx=$(awk -F', ' '$5 == "true" { print NR - 1 }' <<<"$status")
			if [[ -n $idx ]]; then
				leader_first "$idx" "$@"
				return 0
			fi
		fi
		sleep 0.2
	done
	return 1
}

# The rows of the table: "system|workload|clients" -> the run's report file,
# and the CPU ticks the system's servers (SYSTEM_PIDS) used during the run.
declare -A REPORT=() CPU_TICKS=()
ROWS_OF=() # the row names (servers) in table order

# measure FILE CMD...: runs CMD, its stdout to FILE and its stderr to
# FILE.err, in the background, so that a signal to this script is handled at
# once (bash runs a trap only after the foreground command ends). Sets RAN_RC
# to its exit status and RAN_TICKS to the CPU ticks the system's servers
# (SYSTEM_PIDS) used meanwhile; keeps FILE in BENCH_OUT.
measure() {
	local f=$1 p t0
	shift
	RAN_RC=0
	t0=$(ticks "${SYSTEM_PIDS[@]}")
	"$@" >"$f" 2>"$f.err" &
	p=$!
	pids+=("$p")
	wait "$p" || RAN_RC=$?
	RAN_TICKS=$(($(ticks "${SYSTEM_PIDS[@]}") - t0))
	forget "$p"
	if [[ -n $OUT ]]; then
		mkdir -p "$OUT"
		cp "$f" "$OUT/"
	fi
}

# lb ROW WORKLOAD CLIENTS ARGS...: one lockbench run against ADDRS, with the
# CPU ticks of the system's servers (SYSTEM_PIDS) during it.
lb() {
	local row=$1 workload=$2 clients=$3 f rc wl
	shift 3
	wl=(-workload uncontended)
	[[ $workload == hot-key ]] && wl=(-workload contended -names 1)
	f="$work/$row-$workload-$clients.txt"
	measure "$f" bin/lockbench -addr "$ADDRS" "${wl[@]}" -clients "$clients" -duration "$DURATION" -quiet "$@"
	rc=$RAN_RC
	CPU_TICKS["$row|$workload|$clients"]=$RAN_TICKS
	if ((rc != 0)); then
		cat "$f" "$f.err" >&2
		die "lockbench $workload against $row ($ADDRS) failed (exit $rc)"
	fi
	REPORT["$row|$workload|$clients"]=$f
	echo "compare.sh: $row $workload $clients clients: $(field "$f" workload "${wl[1]}" grants/s) cycles/s, acquire p99 $(field "$f" op acquire p99_ms) ms, $(cpu_per_op "${CPU_TICKS["$row|$workload|$clients"]}" "$(field "$f" workload "${wl[1]}" ops)" 1) cpu_us/op, $(field "$f" workload "${wl[1]}" errors) errors" >&2
	sed -n 's/^  /compare.sh:   /; /^first errors:/,$p' "$f" | sed 1d >&2
}

# Start every system first, each paused once it serves; then each cell
# (workload, clients) measures them back to back, so that a change in the
# machine's load over the run (it may be shared) hits them alike, resuming
# each for its runs alone.
declare -A SYS_ADDRS=() SYS_PIDS=()
for system in "${SYSTEMS[@]}"; do
	start_system "$system"
	SYS_ADDRS[$system]=$ADDRS
	SYS_PIDS[$system]=${SYSTEM_PIDS[*]}
	kill -STOP "${SYSTEM_PIDS[@]}" || die "$system exited before its runs"
	case $system in
	etcd-3) ROWS_OF+=(etcd-txn etcd-mutex) ;;
	lockd-3) ROWS_OF+=(lockd-3 lockd-3-lock lockd-3d lockd-3d-lock) ;;
	lockd-3g1) ROWS_OF+=(lockd-3g1-lock lockd-3g1d-lock) ;;
	lockd-3g8) ROWS_OF+=(lockd-3g8-lock lockd-3g8d-lock) ;;
	lockd-3g1e | lockd-3g8e) ROWS_OF+=("$system-lock" "${system}d-lock") ;;
	lockd-*) ROWS_OF+=("$system" "$system-lock") ;;
	*) ROWS_OF+=("$system") ;;
	esac
done

# resume SYSTEM: SIGCONT, then wait until it serves again; sets ADDRS (a
# cluster's leader first: it may have changed) and SYSTEM_PIDS.
resume() {
	local system=$1 addrs
	read -r -a SYSTEM_PIDS <<<"${SYS_PIDS[$system]}"
	kill -CONT "${SYSTEM_PIDS[@]}" || die "$system exited while it was paused"
	IFS=, read -r -a addrs <<<"${SYS_ADDRS[$system]}"
	case $system in
	lockd-1 | redis)
		wait_ping "${addrs[0]##*:}" "${SYSTEM_PIDS[0]}" || die "$system did not serve again after its pause"
		ADDRS=${addrs[0]}
		;;
	lockd-3 | lockd-3g1 | lockd-3g8 | lockd-3g1e | lockd-3g8e)
		ADDRS=$(lockd_leader_first "${addrs[@]}") ||
			die "$system did not serve again (leaders agreed, balanced) within ${START_TIMEOUT}s of its pause"
		;;
	etcd-3)
		ADDRS=$(etcd_leader_first "${addrs[@]}") || die "etcd-3 did not elect a leader within ${START_TIMEOUT}s of its pause"
		;;
	esac
}

for w in "${WORKLOADS[@]}"; do
	for c in "${CLIENTS[@]}"; do
		wait=() # lockd's waiters queue on the hot name (LOCK.ACQUIRE … WAIT)
		[[ $w == hot-key ]] && wait=(-wait 4s)
		for system in "${SYSTEMS[@]}"; do
			[[ $system == lockd-3g8* || $system == lockd-3g1e ]] && [[ $w == hot-key ]] && continue # uncontended only (see the top)
			resume "$system"
			case $system in
			etcd-3)
				lb etcd-txn "$w" "$c" -etcd txn
				lb etcd-mutex "$w" "$c" -etcd mutex
				;;
			lockd-3g1)
				if [[ $w == hot-key ]]; then
					lb lockd-3g1d-lock "$w" "$c" -lock "${wait[@]}" -direct # straight to the leader only (see the top)
				else
					lb lockd-3g1-lock "$w" "$c" -lock
					lb lockd-3g1d-lock "$w" "$c" -lock -direct
				fi
				;;
			lockd-3g8 | lockd-3g1e | lockd-3g8e)
				lb "$system-lock" "$w" "$c" -lock
				lb "${system}d-lock" "$w" "$c" -lock -direct
				;;
			lockd-*)
				lb "$system" "$w" "$c"
				lb "$system-lock" "$w" "$c" -lock "${wait[@]}"
				if [[ $system == lockd-3 ]]; then
					# A cluster-aware client: every command straight to its group's leader.
					lb lockd-3d "$w" "$c" -direct
					lb lockd-3d-lock "$w" "$c" -lock "${wait[@]}" -direct
				fi
				;;
			*) lb "$system" "$w" "$c" ;;
			esac
			kill -STOP "${SYSTEM_PIDS[@]}" || die "$system exited during its runs"
		done
	done
done

# The pipelined rows: "system|TEST" (SET, GET) -> requests per second, and
# the CPU ticks of the server during the run.
declare -A PIPE_RPS=() PIPE_TICKS=()
PIPE_SYSTEMS=() # lockd-1 and redis, those this run has
has lockd-1 && PIPE_SYSTEMS+=(lockd-1)
has redis && PIPE_SYSTEMS+=(redis)
PIPE_TESTS=(SET GET)

# rb SYSTEM TEST: one redis-benchmark run of TEST (SET or GET), pipelined,
# against the resumed SYSTEM (ADDRS, SYSTEM_PIDS), with the server's CPU ticks
# just before and after it.
rb() {
	local system=$1 test=$2 f rc rate
	f="$work/$system-pipelined-$test.csv"
	measure "$f" redis-benchmark -h 127.0.0.1 -p "${ADDRS##*:}" -q --csv -n "$PIPE_N" -c "$PIPE_C" -P "$PIPE_P" -t "${test,,}"
	rc=$RAN_RC
	PIPE_TICKS["$system|$test"]=$RAN_TICKS
	cat "$f.err" >>"$f"
	# --csv: a header line, then "TEST","rps",...; an error reply prints a
	# line with "ERR" or "Error".
	rate=$(tr -d '\r' <"$f" | awk -F'"' -v t="$test" '$2 == t && $4 ~ /^[0-9.]+$/ { printf "%.0f", $4; exit }')
	if ((rc != 0)) || grep -qE 'ERR|[Ee]rror' "$f" || ! [[ $rate =~ ^[0-9.]+$ ]]; then
		cat "$f" >&2
		die "redis-benchmark -t $test -P $PIPE_P against $system ($ADDRS) failed (exit $rc)"
	fi
	PIPE_RPS["$system|$test"]=$rate
	echo "compare.sh: $system pipelined $test: $rate requests/s, $(cpu_per_op "${PIPE_TICKS["$system|$test"]}" "$PIPE_N" 2) cpu_us/op" >&2
}

for t in "${PIPE_TESTS[@]}"; do
	for system in ${PIPE_SYSTEMS[@]+"${PIPE_SYSTEMS[@]}"}; do
		resume "$system"
		rb "$system" "$t"
		kill -STOP "${SYSTEM_PIDS[@]}" || die "$system exited during its runs"
	done
done

# value ROW WORKLOAD CLIENTS TABLE ROWNAME COLUMN: one number of one run.
value() {
	local f=${REPORT["$1|$2|$3"]:-}
	[[ -n $f ]] || {
		echo -
		return
	}
	field "$f" "$4" "$5" "$6"
}
wlname() { # wlname WORKLOAD: lockbench's name for it in its report
	if [[ $1 == hot-key ]]; then echo contended; else echo uncontended; fi
}
cycles() { # cycles ROW WORKLOAD CLIENTS: grants per second
	value "$1" "$2" "$3" workload "$(wlname "$2")" grants/s
}
errors() {
	value "$1" "$2" "$3" workload "$(wlname "$2")" errors
}
cpu() { # cpu ROW WORKLOAD CLIENTS: the servers' CPU microseconds per op
	cpu_per_op "${CPU_TICKS["$1|$2|$3"]:-}" "$(value "$1" "$2" "$3" workload "$(wlname "$2")" ops)" 1
}
ratio() { # ratio A B: A/B with two decimals, "-" unless both are numbers
	awk -v a="$1" -v b="$2" 'BEGIN { if (a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/ && b > 0) printf "%.2f", a / b; else print "-" }'
}

# What was measured, on what: the text table's header and the Markdown page's.
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo "?")
RUN_END=$(date -u '+%Y-%m-%d %H:%M UTC')
ETCD_VERSION=$(etcd --version 2>/dev/null | sed -n 's/^etcd Version: //p') || true
REDIS_VERSION=$(redis-server --version 2>/dev/null | sed -n 's/.* v=\([^ ]*\).*/\1/p') || true
echo
echo "make bench: lockbench, $DURATION per run, closed loop, one connection per client, lock TTL 10s;"
echo "redis-server ${REDIS_VERSION:-?}: appendonly yes, appendfsync always; etcd ${ETCD_VERSION:-?} (3 members) through go.etcd.io/etcd/client/v3;"
echo "machine: $(nproc) CPUs; load average (1, 5, 15 min) $LOAD_START at the start, $LOAD_END at the end."
echo "cycles/s = grants per second (one acquire→release cycle each; on hot-key: hand-overs per second)."
echo "cpu_us/op = the system's server processes' CPU (user + system) during the run, in microseconds, over its ops (every reply)."
echo "/X (lockd rows) = lockd's cycles/s over X's, same workload and clients (above 1: lockd does more)."
textrow() {
	printf '%-11s %7s  %-15s %9s %9s %8s %8s %9s %8s %8s %9s %6s %8s %9s %10s\n' "$@"
}
MD_ROWS=() # the same rows as Markdown table rows
textrow workload clients server cycles/s ops/s acq_p50 acq_p99 acq_p99.9 rel_p50 rel_p99 cpu_us/op errors /redis /etcd-txn /etcd-mutex
for w in "${WORKLOADS[@]}"; do
	for c in "${CLIENTS[@]}"; do
		for row in "${ROWS_OF[@]}"; do
			[[ -n ${REPORT["$row|$w|$c"]:-} ]] || continue # lockd-3g1-lock, lockd-3g8* on hot-key
			wn=$(wlname "$w")
			cy=$(cycles "$row" "$w" "$c")
			rr=- rt=- rm=-
			if [[ $row == lockd-* ]]; then
				rr=$(ratio "$cy" "$(cycles redis "$w" "$c")")
				rt=$(ratio "$cy" "$(cycles etcd-txn "$w" "$c")")
				rm=$(ratio "$cy" "$(cycles etcd-mutex "$w" "$c")")
			fi
			cells=("$cy" "$(value "$row" "$w" "$c" workload "$wn" ops/s)"
				"$(value "$row" "$w" "$c" op acquire p50_ms)" "$(value "$row" "$w" "$c" op acquire p99_ms)"
				"$(value "$row" "$w" "$c" op acquire p99.9_ms)"
				"$(value "$row" "$w" "$c" op release p50_ms)" "$(value "$row" "$w" "$c" op release p99_ms)"
				"$(cpu "$row" "$w" "$c")" "$(errors "$row" "$w" "$c")" "$rr" "$rt" "$rm")
			textrow "$w" "$c" "$row" "${cells[@]}"
			MD_ROWS+=("| $w | $c | \`$row\` |$(printf ' %s |' "${cells[@]}")")
		done
	done
done

# The pipelined rows: the text table, and the same as Markdown rows.
PIPE_MD_ROWS=()
if ((${#PIPE_SYSTEMS[@]} > 0)); then
	echo
	echo "redis-benchmark -q --csv -n $PIPE_N -c $PIPE_C -P $PIPE_P, -t set then -t get; cpu_us/op = the server's CPU per request;"
	echo "/redis (lockd-1) = lockd-1's requests/s over redis's, same test."
	printf '%-9s %-10s %12s %10s %7s\n' system test requests/s cpu_us/op /redis
	for t in "${PIPE_TESTS[@]}"; do
		for system in "${PIPE_SYSTEMS[@]}"; do
			rps=${PIPE_RPS["$system|$t"]} rr=-
			[[ $system == lockd-1 ]] && rr=$(ratio "$rps" "${PIPE_RPS["redis|$t"]:-}")
			cells=("$t -P $PIPE_P" "$rps" "$(cpu_per_op "${PIPE_TICKS["$system|$t"]}" "$PIPE_N" 2)" "$rr")
			printf '%-9s %-10s %12s %10s %7s\n' "$system" "${cells[@]}"
			PIPE_MD_ROWS+=("| \`$system\` |$(printf ' %s |' "${cells[@]}")")
		done
	done
fi

# Issue 9's targets, where this run measured both sides.
verdict() { # verdict CONDITION-AS-AWK-EXPR: met / MISSED / - (no data)
	awk "BEGIN { print ($1) ? \"met\" : \"MISSED\" }" 2>/dev/null || echo -
}
both() { # both VERDICT VERDICT: a target of two parts is met when both are
	if [[ $1 == met && $2 == met ]]; then echo met; else echo MISSED; fi
}
num() { [[ $1 =~ ^[0-9.]+$ ]]; }
MD_TARGETS=() # each target as one line, for the Markdown page
# target LABEL RESULT [LABEL RESULT]...: prints a target, a line per pair, and
# keeps it as one line.
target() {
	local labels="" results=""
	while (($# >= 2)); do
		printf '  %-76s %s\n' "$1" "$2"
		labels+="${labels:+ }${1#"${1%%[! ]*}"}" results+="${results:+ }$2"
		shift 2
	done
	MD_TARGETS+=("$labels — $results")
}
echo
echo "issue 9 targets (latencies in ms):"
top=${CLIENTS[-1]}
THREE=()
has lockd-3 && THREE+=(lockd-3 lockd-3-lock lockd-3d lockd-3d-lock)
has lockd-3g1 && THREE+=(lockd-3g1-lock lockd-3g1d-lock)
has lockd-3g8 && THREE+=(lockd-3g8-lock lockd-3g8d-lock)
has lockd-3g1e && THREE+=(lockd-3g1e-lock lockd-3g1ed-lock)
has lockd-3g8e && THREE+=(lockd-3g8e-lock lockd-3g8ed-lock)
if ((${#THREE[@]} > 0)) && has etcd-3; then
	for row in "${THREE[@]}"; do
		l=$(cycles "$row" uncontended "$top") e=$(cycles etcd-txn uncontended "$top") p=$(value "$row" uncontended "$top" op acquire p99_ms)
		r=$(ratio "$l" "$e") v=- vr=- vp=-
		num "$r" && num "$p" && vr=$(verdict "$r >= 5") vp=$(verdict "$p < 10") && v=$(both "$vr" "$vp")
		target "$row, uncontended, $top clients: >= 5x etcd-txn, acquire p99 < 10" "${r}x ($l vs $e cycles/s): $vr, p99 $p: $vp; target $v"
	done
	for row in "${THREE[@]}"; do
		l=$(value "$row" uncontended "${CLIENTS[0]}" op acquire p50_ms) e=$(value etcd-txn uncontended "${CLIENTS[0]}" op acquire p50_ms) v=-
		num "$l" && num "$e" && v=$(verdict "$l <= $e")
		target "$row, ${CLIENTS[0]} client(s): acquire p50 <= etcd-txn's" "$l vs $e: $v"
	done
	HOT=()
	has lockd-3 && HOT+=(lockd-3-lock lockd-3d-lock)
	has lockd-3g1 && HOT+=(lockd-3g1d-lock)
	for row in ${HOT[@]+"${HOT[@]}"}; do
		l=$(cycles "$row" hot-key 16) e=$(cycles etcd-mutex hot-key 16) r=$(ratio "$l" "$e") v=-
		o=$(value "$row" hot-key 16 workload contended ops/s) per=$(ratio "$o" "$l")
		vr=- vc=-
		num "$r" && num "$per" && vr=$(verdict "$r >= 10") vc=$(verdict "$per <= 2.05") && v=$(both "$vr" "$vc")
		target "$row hot name, 16 waiters: >= 10x etcd-mutex hand-overs/s," "${r}x ($l vs $e/s): $vr," \
			"  <= 2 commands (one LOCK.ACQUIRE ... WAIT, one LOCK.RELEASE) per hand-over" "$per: $vc; target $v"
	done
fi
if has lockd-1 && has redis; then
	for row in lockd-1 lockd-1-lock; do
		r=$(ratio "$(cycles "$row" uncontended "$top")" "$(cycles redis uncontended "$top")") v=-
		num "$r" && v=$(verdict "$r >= 1")
		target "$row, uncontended, $top clients: >= 1x redis" "${r}x: $v"
	done
fi
echo "  (1 million held locks, memory and restart: not measured here)"

# Issue 50's targets: each a line with what was measured, the target and the
# verdict (met, MISSED; "not run" when a row it needs was not run: a
# BENCH_SYSTEMS subset, or BENCH_CLIENTS without 64).
MD_GOALS=() # each as one line, for the Markdown page
# goal LABEL MEASURED TARGET VERDICT: prints one target and keeps it.
goal() {
	local line
	if [[ $4 == "not run" ]]; then
		line="$1: not run; target $3"
	else
		line="$1: $2; target $3: $4"
	fi
	echo "  $line"
	MD_GOALS+=("$line")
}
# goal_ratio LABEL A B OP BOUND UNIT: the target A/B OP BOUND (OP: >= or <=).
goal_ratio() {
	local r v=-
	if num "$2" && num "$3"; then
		r=$(ratio "$2" "$3")
		num "$r" && v=$(verdict "$r $4 $5")
		goal "$1" "${r}x ($2 vs $3 $6)" "$4 ${5}x" "$v"
	else
		goal "$1" "" "$4 ${5}x" "not run"
	fi
}
echo
echo "issue 50 targets (uncontended, 64 clients; latencies in ms):"
g3="lockd-3${GROUPS_OF[lockd-3]:+ (${GROUPS_OF[lockd-3]} groups)}"
l=$(cycles lockd-3-lock uncontended 64) e=$(cycles etcd-txn uncontended 64) p=$(value lockd-3-lock uncontended 64 op acquire p99_ms)
if num "$l" && num "$e" && num "$p"; then
	r=$(ratio "$l" "$e") vr=- vp=-
	num "$r" && vr=$(verdict "$r >= 5")
	vp=$(verdict "$p < 10")
	goal "lockd-3-lock ÷ etcd-txn, $g3" "${r}x ($l vs $e cycles/s), acquire p99 $p" ">= 5x, p99 < 10" "$(both "$vr" "$vp")"
else
	goal "lockd-3-lock ÷ etcd-txn, $g3" "" ">= 5x, p99 < 10" "not run"
fi
goal_ratio "lockd-3d-lock (cluster-aware) ÷ etcd-txn, $g3" "$(cycles lockd-3d-lock uncontended 64)" "$e" ">=" 6 cycles/s
goal_ratio "8 groups ÷ 1 group, lockd-3g8-lock ÷ lockd-3g1-lock" \
	"$(cycles lockd-3g8-lock uncontended 64)" "$(cycles lockd-3g1-lock uncontended 64)" ">=" 0.9 cycles/s
goal_ratio "8 groups ÷ 1 group, lockd-3g8d-lock ÷ lockd-3g1d-lock" \
	"$(cycles lockd-3g8d-lock uncontended 64)" "$(cycles lockd-3g1d-lock uncontended 64)" ">=" 0.9 cycles/s
goal_ratio "on the engine (-engine): 8 groups ÷ 1 group, lockd-3g8e-lock ÷ lockd-3g1e-lock" \
	"$(cycles lockd-3g8e-lock uncontended 64)" "$(cycles lockd-3g1e-lock uncontended 64)" ">=" 0.9 cycles/s
goal_ratio "on the engine (-engine): 8 groups ÷ 1 group, lockd-3g8ed-lock ÷ lockd-3g1ed-lock" \
	"$(cycles lockd-3g8ed-lock uncontended 64)" "$(cycles lockd-3g1ed-lock uncontended 64)" ">=" 0.9 cycles/s
goal_ratio "on the engine (-engine), 8 groups: lockd-3g8e-lock ÷ etcd-txn" "$(cycles lockd-3g8e-lock uncontended 64)" "$e" ">=" 5 cycles/s
goal_ratio "on the engine (-engine), 8 groups: lockd-3g8ed-lock (cluster-aware) ÷ etcd-txn" "$(cycles lockd-3g8ed-lock uncontended 64)" "$e" ">=" 6 cycles/s
goal_ratio "single node, lockd-1 ÷ redis" "$(cycles lockd-1 uncontended 64)" "$(cycles redis uncontended 64)" ">=" 1.2 cycles/s
for t in "${PIPE_TESTS[@]}"; do
	goal_ratio "redis-benchmark -P $PIPE_P $t, lockd-1 ÷ redis" "${PIPE_RPS["lockd-1|$t"]:-}" "${PIPE_RPS["redis|$t"]:-}" ">=" 1.0 requests/s
done
# Forwarding's cost: the servers' CPU per op with clients spread over the
# nodes (a node forwards what it does not lead) over clients at the leaders.
goal_ratio "forwarding's CPU, lockd-3-lock ÷ lockd-3d-lock cpu_us/op, $g3" \
	"$(cpu lockd-3-lock uncontended 64)" "$(cpu lockd-3d-lock uncontended 64)" "<=" 1.3 "µs/op"
p=$(value lockd-3-lock uncontended 64 op acquire p50_ms) v="not run"
num "$p" && v=$(verdict "$p <= 2")
goal "lockd-3-lock acquire p50, $g3" "$p" "<= 2" "$v"

# The Markdown page (BENCH_TABLE): the same table and targets, with when, what
# and where they were measured, and a warning at the top of a run that is not
# a full make bench.
[[ -n $TABLE ]] || exit 0
same_set() { # same_set "A B C" "C A B": whether two word lists hold the same words
	[[ $(tr ' ' '\n' <<<"$1" | sort -u | grep .) == "$(tr ' ' '\n' <<<"$2" | sort -u | grep .)" ]]
}
notes=()
same_set "${SYSTEMS[*]}" "$ALL_SYSTEMS" || notes+=("systems \`${SYSTEMS[*]}\` (BENCH_SYSTEMS; make bench: \`$ALL_SYSTEMS\`)")
same_set "${CLIENTS[*]}" "$ALL_CLIENTS" || notes+=("clients \`${CLIENTS[*]}\` (BENCH_CLIENTS; make bench: \`$ALL_CLIENTS\`)")
partial=""
if ((${#notes[@]} > 0)); then
	partial="a partial run: only ${notes[0]}${notes[1]:+, and only ${notes[1]}}"
fi
short=""
if [[ $DURATION != "$FULL_DURATION" ]]; then
	if [[ -z ${BENCH_DURATION:-} && ${BENCH_QUICK:-0} != 0 ]]; then
		short="a quick run (BENCH_QUICK): $DURATION per run instead of $FULL_DURATION, so every number is noisier"
	else
		short="runs of $DURATION (BENCH_DURATION) instead of $FULL_DURATION"
	fi
fi
cpu=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null) || true
mem=$(awk '/^MemTotal:/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo 2>/dev/null) || true
fs=$(df --output=fstype "$work" 2>/dev/null | tail -n 1) || true
when="$RUN_START to $RUN_END"
[[ ${RUN_START% *:*} == "${RUN_END% *:*}" ]] && when="${RUN_START% UTC} to ${RUN_END#* }"
peers=""
has redis && peers="redis-server ${REDIS_VERSION:-?} (\`appendonly yes\`, \`appendfsync always\`)"
has etcd-3 && peers+="${peers:+; }etcd ${ETCD_VERSION:-?} (3 members, through go.etcd.io/etcd/client/v3)"
# The lockd clusters' Raft groups, as their nodes reported them.
groups_note=""
for system in lockd-3 lockd-3g1 lockd-3g8 lockd-3g1e lockd-3g8e; do
	has "$system" || continue
	how="" g=""
	[[ $system == lockd-3 ]] && how=$([[ -n ${LOCKD_GROUPS:-} ]] && echo " (LOCKD_GROUPS)" || echo " (lockd's default)")
	g=${GROUPS_OF[$system]:-?}
	groups_note+="; $system with $g Raft group$([[ $g == 1 ]] || echo s)$how"
done
md="$work/latest.md"
{
	echo "# make bench: the latest run"
	echo
	echo "<!-- Written by scripts/compare.sh (make bench) at the end of each run; edits are"
	echo "     lost. Older runs are in this file's git history. -->"
	echo
	if [[ -n $partial || -n $short ]]; then
		echo "> **Not a full \`make bench\`:** ${partial}${partial:+${short:+; }}${short}."
		echo
	fi
	echo "What the rows, workloads and columns measure, and what bounds each number:"
	echo "[the benchmarks page](../benchmarks.md)."
	echo
	echo "- **When:** $when"
	echo "- **Commit:** \`${COMMIT:-unknown (not a git checkout)}\` (built with $(go env GOVERSION))"
	echo "- **Machine:** ${cpu:-$(uname -m)}, $(nproc) CPUs, ${mem:-? GiB} memory, $(uname -sr); the data in a temporary directory on ${fs:-?} (\`${TMPDIR:-/tmp}\`); load average (1, 5, 15 min) $LOAD_START at the start, $LOAD_END at the end"
	echo "- **Peers:** ${peers:-none in this run}"
	echo "- **Settings:** $DURATION per run, closed loop, one connection per client, lock TTL 10 s; clients ${CLIENTS[*]}; systems ${SYSTEMS[*]}$groups_note$( ((${#PIPE_SYSTEMS[@]} > 0)) && echo "; pipelined: redis-benchmark -n $PIPE_N -c $PIPE_C -P $PIPE_P")"
	echo
	echo "## Results"
	echo
	echo "cycles/s: grants per second (one acquire→release cycle each; on hot-key, hand-overs per second)."
	echo "ops/s: every reply, tries that found the name taken included. Latencies in ms."
	echo "cpu_us/op: the system's server processes' CPU (user + system) during the run, in microseconds, over its ops; the load generator's not counted."
	echo "/redis, /etcd-txn, /etcd-mutex (lockd rows): lockd's cycles/s over that system's, same workload and clients (above 1: lockd does more)."
	echo
	echo "| workload | clients | server | cycles/s | ops/s | acquire p50 | acquire p99 | acquire p99.9 | release p50 | release p99 | cpu_us/op | errors | /redis | /etcd-txn | /etcd-mutex |"
	echo "|---|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
	printf '%s\n' ${MD_ROWS[@]+"${MD_ROWS[@]}"}
	echo
	if ((${#PIPE_MD_ROWS[@]} > 0)); then
		echo "### Pipelined"
		echo
		echo "\`redis-benchmark -q --csv -n $PIPE_N -c $PIPE_C -P $PIPE_P\`, \`-t set\` then \`-t get\`, against the same single node and Redis."
		echo "cpu_us/op: the server's CPU per request. /redis (lockd-1): lockd-1's requests/s over Redis's."
		echo
		echo "| system | test | requests/s | cpu_us/op | /redis |"
		echo "|---|---|--:|--:|--:|"
		printf '%s\n' "${PIPE_MD_ROWS[@]}"
		echo
	fi
	echo "## Targets"
	echo
	echo "Issue 9's targets, where this run measured both sides (latencies in ms):"
	echo
	if ((${#MD_TARGETS[@]} > 0)); then
		printf -- '- %s\n' "${MD_TARGETS[@]}" | sed 's/MISSED/**MISSED**/g'
	else
		echo "- none: this run measured no target's two sides"
	fi
	echo "- 1 million held locks, memory <= 2x Redis and restart <= 10 s: not measured here (\`make bench-memory\`)"
	echo
	echo "## Issue 50's targets"
	echo
	echo "Uncontended, 64 clients; latencies in ms; \"not run\" where this run did not run a row the target needs:"
	echo
	printf -- '- %s\n' "${MD_GOALS[@]}" | sed 's/MISSED/**MISSED**/g'
} >"$md"
# Into place atomically: a temporary file beside the destination, then mv.
tmp=$(mktemp "$(dirname "$TABLE")/.$(basename "$TABLE").XXXXXX")
if ! { cat "$md" >"$tmp" && chmod 644 "$tmp" && mv -f "$tmp" "$TABLE"; }; then
	rm -f "$tmp"
	die "could not write $TABLE"
fi
echo "compare.sh: wrote $TABLE" >&2
