#!/usr/bin/env bash
# scale.sh — `make bench-scale`: the scale-out measurement of issue 49. For
# each cluster size N it starts a fresh N-node lockd cluster on 127.0.0.1
# (-peers with all N, -groups 8, and -replicas 3 when bin/lockd has that flag;
# without it every node hosts every group, and the table says so), waits until
# the groups have settled (every node answers RAFT GROUPS, every group has a
# leader and members that all nodes name, no placement move is under way, and
# then either each group is on its preferred leader, the balance loop's
# layout while every node hosts every group, or, on a placed cluster, no
# leader or member changed for a few seconds), then runs the same closed-loop
# load from cmd/lockbench twice: uncontended LOCK.ACQUIRE → LOCK.RELEASE
# cycles, first with the clients spread over all the nodes (client i on node
# i mod N, which relays a name whose group it does not lead), then routed as
# a cluster-aware client routes them (lockbench -direct: each client on a
# group leader, with names in that leader's slots). Per N and routing it
# reports cycles/s, acquire p50 and p99, the servers' CPU per 1000 operations
# (all nodes together, and per node: that over N), each node's CPU (% of one
# core: with no load, over a few seconds once the groups have settled, the
# mean over the nodes; and over the run, mean and max), and the fsyncs of the
# nodes' shared Raft logs per operation (lockd_log_commits_total on each
# node's /metrics, summed over the nodes, and per node: that over N). An operation is one
# LOCK.ACQUIRE or one LOCK.RELEASE (lockbench's ops). Bytes sent between peers
# are not reported: no metric counts them.
#
# Prints the table and writes it as Markdown, with the date, commit and
# machine, to docs/bench/scale.md (SCALE_TABLE). Everything runs on 127.0.0.1
# with its data in a temporary directory; on exit it stops the processes it
# started, by PID, and only those.
# Environment:
#   SCALE_NODES     the cluster sizes (default "3 6 9")
#   SCALE_ROUTING   the client routings, in order (default "spread direct")
#   SCALE_CLIENTS   lockbench clients (default 64)
#   SCALE_GROUPS    Raft groups (default 8)
#   SCALE_REPLICAS  voters per group, when bin/lockd has -replicas (default 3)
#   BENCH_DURATION  each run's length, a Go duration (default 10s)
#   LOCKD_BIN       a lockd binary to measure (default: bin/lockd, built from
#                   this checkout; the page's commit is then this checkout's)
#   SCALE_TABLE     where to write the Markdown page (default
#                   docs/bench/scale.md, relative to the repository root);
#                   empty or - writes none
set -euo pipefail
cd "$(dirname "$0")/.."

die() {
	echo "scale.sh: $*" >&2
	exit 1
}

FULL_NODES="3 6 9" FULL_ROUTING="spread direct" FULL_CLIENTS=64 FULL_DURATION=10s
read -r -a NODES <<<"${SCALE_NODES:-$FULL_NODES}"
read -r -a ROUTING <<<"${SCALE_ROUTING:-$FULL_ROUTING}"
CLIENTS=${SCALE_CLIENTS:-$FULL_CLIENTS}
GROUPS_N=${SCALE_GROUPS:-8}
REPLICAS=${SCALE_REPLICAS:-3}
DURATION=${BENCH_DURATION:-$FULL_DURATION}
TABLE=${SCALE_TABLE-docs/bench/scale.md}
[[ $TABLE == - ]] && TABLE=""
((${#NODES[@]} > 0)) || die "SCALE_NODES is empty"
for n in "${NODES[@]}"; do
	[[ $n =~ ^[1-9][0-9]*$ ]] || die "SCALE_NODES must be node counts, not '$n'"
done
for r in "${ROUTING[@]}"; do
	[[ $r == spread || $r == direct ]] || die "SCALE_ROUTING must be spread or direct, not '$r'"
done
for v in CLIENTS GROUPS_N REPLICAS; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive count, not '${!v}'"
done
START_TIMEOUT=60 # s: a node's first PONG, and every group led and settled
SETTLE=6         # s: leaders and members unchanged this long count as settled (3 balance ticks)
IDLE=3           # s: the window of each cluster's CPU with no load
command -v redis-cli >/dev/null || die "redis-cli is not on PATH (make deps)"
command -v curl >/dev/null || die "curl is not on PATH"
mkdir -p bin
if [[ -n ${LOCKD_BIN:-} ]]; then
	[[ -x $LOCKD_BIN ]] || die "LOCKD_BIN=$LOCKD_BIN is not an executable file"
else
	LOCKD_BIN=bin/lockd
	go build -o bin/lockd ./cmd/lockd
fi
go build -o bin/lockbench ./cmd/lockbench

# The commit measured (what was just built), "+dirty" when tracked files
# differ from it (other than the pages the benchmarks write in docs/bench/).
COMMIT=$(git rev-parse --short HEAD 2>/dev/null) || COMMIT=""
if [[ -n $COMMIT && -n $(git status --porcelain --untracked-files=no -- . ':(exclude)docs/bench' 2>/dev/null) ]]; then
	COMMIT+="+dirty"
fi
RUN_START=$(date -u '+%Y-%m-%d %H:%M UTC')
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo "?")
work=$(mktemp -d "${TMPDIR:-/tmp}/lockd-scale.XXXXXX")
# shellcheck source=scripts/lib.sh
. scripts/lib.sh # (the cd above: relative to the repository root)
TICK=$(getconf CLK_TCK)

# Placement: -replicas only where this lockd has it (issue 49 is landing it).
FLAGS=(-groups "$GROUPS_N")
HAVE_REPLICAS=0
if "$LOCKD_BIN" -h 2>&1 | grep -qE '^[[:space:]]+-replicas([[:space:]]|$)'; then
	HAVE_REPLICAS=1
	FLAGS+=(-replicas "$REPLICAS")
else
	echo "scale.sh: warning: $LOCKD_BIN has no -replicas flag: every node hosts every group" >&2
fi

# groups_state PORT...: one look at every node's RAFT GROUPS. Prints "ok
# SIGNATURE PREFERRED PLACED VOTERS HOSTED LEADING" when each of the GROUPS_N
# groups has a leader that every node names, every node lists the same
# members (voters) for it, and no node shows a placement move of it under way
# (RAFT GROUPS' "moving", where lockd has that field). SIGNATURE is each
# group's leader and members, in group order; PREFERRED 1 when each group is
# led by its preferred leader (lib.sh's rule: group g by the (g mod n)-th of
# its n members in id order, the balance loop's layout while every node hosts
# every group); PLACED 1 when the groups are placed (a group has fewer voters
# than there are nodes: group 0's leader then moves leaders, and the rule does
# not hold); VOTERS the most voters of a group; HOSTED and LEADING the most
# groups one node is a voter of and leads. Otherwise "wait REASON".
groups_state() {
	local port
	for port in "$@"; do
		echo "#node $port"
		timeout 2 redis-cli -h 127.0.0.1 -p "$port" RAFT GROUPS 2>/dev/null | tr -d '\r' || true
	done | awk -v groups="$GROUPS_N" '
		# RAFT GROUPS through redis-cli: key and value lines, alternating.
		function node_done() {
			if (port == "") return
			if (!answered) { bad = "node " port " did not answer RAFT GROUPS"; return }
			nodes++
		}
		/^#node / { node_done(); port = $2; answered = 0; iskey = 1; next }
		iskey { key = $0; iskey = 0; next }
		{
			iskey = 1; answered = 1
			if (key == "group") { g = $0 + 0; next }
			if (key == "leader") {
				if ($0 == "") { bad = "group " g " has no leader (node " port ")"; next }
				if ((g in lead) && lead[g] != $0) { bad = "nodes name different leaders of group " g; next }
				lead[g] = $0
			}
			if (key == "members") {
				if ((g in mem) && mem[g] != $0) { bad = "nodes list different members of group " g; next }
				mem[g] = $0
			}
			if (key == "moving" && $0 != "") bad = "group " g " is moving (" $0 ")"
		}
		END {
			node_done()
			if (bad != "") { print "wait " bad; exit }
			sig = ""; preferred = 1; voters = 0
			for (g = 0; g < groups; g++) {
				if (!(g in lead)) { print "wait group " g " is not listed with a leader"; exit }
				sig = sig (g ? "," : "") lead[g] ":" mem[g]
				n = split(mem[g], ids, ";")
				for (i = 2; i <= n; i++) { # insertion sort: id order
					x = ids[i]
					for (j = i - 1; j >= 1 && ids[j] > x; j--) ids[j + 1] = ids[j]
					ids[j + 1] = x
				}
				if (n == 0 || ids[g % n + 1] != lead[g]) preferred = 0
				if (n > voters) voters = n
				for (i = 1; i <= n; i++) hosted[ids[i]]++
				leading[lead[g]]++
			}
			h = 0; l = 0
			for (id in hosted) if (hosted[id] > h) h = hosted[id]
			for (id in leading) if (leading[id] > l) l = leading[id]
			print "ok", sig, preferred, (voters < nodes ? 1 : 0), voters, h, l
		}'
}

# wait_settled PORT...: poll groups_state until every group is led, nothing
# moves, and the leaders have settled: START_TIMEOUT s at most. A cluster
# whose every node hosts every group is settled once each group is on its
# preferred leader, or no leader or member changed for SETTLE s; a placed
# cluster (group 0's leader balances replicas and leaders, with no fixed
# layout to wait for) once no leader or member changed for SETTLE s. Sets
# SIG (the signature settled on), PLACED (1 for a placed cluster), PLACE
# ("VOTERS HOSTED LEADING") and SETTLED ("preferred" or "stable"); fails
# with the last reason.
wait_settled() {
	local deadline=$((SECONDS + START_TIMEOUT)) st sig="" since=$SECONDS reason=""
	local -a f
	while ((SECONDS < deadline)); do
		st=$(groups_state "$@")
		read -r -a f <<<"$st"
		if [[ ${f[0]:-} == ok ]]; then
			[[ ${f[1]} == "$sig" ]] || { sig=${f[1]} since=$SECONDS; }
			SIG=$sig PLACED=${f[3]} PLACE="${f[4]} ${f[5]} ${f[6]}"
			if [[ ${f[2]} == 1 && ${f[3]} == 0 ]]; then
				SETTLED=preferred
				return 0
			fi
			if ((SECONDS - since >= SETTLE)); then
				SETTLED=stable
				return 0
			fi
			reason="a leader or member changed less than ${SETTLE}s ago"
		else
			sig="" reason=${st#wait }
		fi
		sleep 0.5
	done
	echo "scale.sh: the groups did not settle within ${START_TIMEOUT}s${reason:+: $reason}" >&2
	return 1
}

# commits PORT...: each node's lockd_log_commits_total (its shared Raft log's
# synced writes), one a line; "-" where /metrics does not give it.
commits() {
	local port v
	for port in "$@"; do
		v=$(curl -fsS --max-time 5 "http://127.0.0.1:$port/metrics" 2>/dev/null |
			awk '$1 == "lockd_log_commits_total" { printf "%.0f", $2; found = 1 } END { if (!found) print "-" }') || v="-"
		echo "${v:--}"
	done
}

# measure N MODE: one run of the load against the running N-node cluster
# (RESP_PORTS, HTTP_PORTS, SYSTEM_PIDS), its clients routed by MODE (spread:
# client i on node i mod N, which relays what it does not lead; direct:
# lockbench -direct, each client on a group leader with names that leader's
# groups hold, as a cluster-aware client). Waits for settled groups first;
# adds a table row to MD_ROWS and any remark to notes.
measure() {
	local n=$1 mode=$2 f start end gen ops cycles p50 p99 errors voters hosted leading st
	local cpuop cpunode mean max genpct fsyncs fsyncsnode
	local -a c0 c1 t0 t1 route=()
	[[ $mode == direct ]] && route=(-direct)
	wait_settled "${RESP_PORTS[@]}" || die "$n nodes ($mode): the groups did not settle"
	[[ $SETTLED == preferred || $PLACED == 1 ]] ||
		notes+=("$n nodes, $mode: the run started once no group leader had changed for ${SETTLE} s, not every group on its preferred leader")
	read -r voters hosted leading <<<"$PLACE"
	mapfile -t c0 < <(commits "${HTTP_PORTS[@]}")
	t0=() # each node's CPU ticks before the load
	for pid in "${SYSTEM_PIDS[@]}"; do t0+=("$(ticks "$pid")"); done
	f="$work/report-$n-$mode.txt"
	start=${EPOCHREALTIME/[.,]/} # µs
	# the generator's CPU: its parent shell's children's ticks once it exited
	gen=$(bash -c '"$@" >"$0" || exit 1; awk "{ print \$16 + \$17 }" /proc/$$/stat' "$f" \
		bin/lockbench -addr "$ADDRS" ${route[@]+"${route[@]}"} -lock -clients "$CLIENTS" -duration "$DURATION" -quiet) ||
		die "$n nodes ($mode): lockbench failed: $(cat "$f")"
	end=${EPOCHREALTIME/[.,]/}
	t1=()
	for pid in "${SYSTEM_PIDS[@]}"; do t1+=("$(ticks "$pid")"); done
	mapfile -t c1 < <(commits "${HTTP_PORTS[@]}")
	st=$(groups_state "${RESP_PORTS[@]}")
	[[ $st == "ok $SIG "* ]] ||
		notes+=("$n nodes, $mode: the groups' leaders or members were not the same after the run as before it (${st#ok })")

	ops=$(field "$f" workload uncontended ops)
	cycles=$(field "$f" workload uncontended grants/s)
	p50=$(field "$f" op acquire p50_ms)
	p99=$(field "$f" op acquire p99_ms)
	errors=$(field "$f" workload uncontended errors)
	# CPU ms per 1000 ops (all nodes, and their mean), node CPU mean and max
	# (% of one core), the generator's CPU (%), fsyncs per op (all nodes,
	# and their mean; "-" when a node gave no count)
	read -r cpuop cpunode mean max genpct fsyncs fsyncsnode < <(
		awk -v ops="$ops" -v tick="$TICK" -v wall="$(((end - start) / 1000))e-3" \
			-v t0="${t0[*]}" -v t1="${t1[*]}" -v c0="${c0[*]}" -v c1="${c1[*]}" -v gen="$gen" 'BEGIN {
			n = split(t0, a, " "); split(t1, b, " "); split(c0, x, " "); split(c1, y, " ")
			total = 0; max = 0; syncs = 0
			for (i = 1; i <= n; i++) {
				d = b[i] - a[i]; total += d
				pct = d / tick / wall * 100
				if (pct > max) max = pct
				if (x[i] == "-" || y[i] == "-") syncs = -1
				else if (syncs >= 0) syncs += y[i] - x[i]
			}
			cpu = total * 1000 / tick * 1000 # CPU ms per 1000 ops, times ops
			if (ops > 0) printf "%.1f %.1f", cpu / ops, cpu / ops / n; else printf "- -"
			printf " %.0f %.0f %.0f", total / tick / wall * 100 / n, max, gen / tick / wall * 100
			if (syncs >= 0 && ops > 0) printf " %.3f %.3f\n", syncs / ops, syncs / ops / n; else print " - -"
		}')
	echo "scale.sh: $n nodes, $mode: $cycles cycles/s, acquire p50 $p50 ms, p99 $p99 ms," \
		"$cpuop CPU ms/1000 ops ($cpunode per node), node CPU mean $mean% max $max%," \
		"$fsyncs fsyncs/op ($fsyncsnode per node), $errors errors" >&2
	[[ $errors == 0 ]] || notes+=("$n nodes, $mode: $errors error replies")
	MD_ROWS+=("| $n | $mode | $voters | $hosted | $leading | $cycles | $p50 | $p99 | $errors | $cpuop | $cpunode | $IDLE_PCT | $mean | $max | $fsyncs | $fsyncsnode | $genpct |")
}

# idle_cpu N: the N nodes' CPU with no load, mean over the nodes, % of one core,
# over IDLE s once the groups have settled (heartbeats, the balance loop, the
# runtime): the part of each run's CPU that no operation causes. Sets IDLE_PCT.
idle_cpu() {
	local -a t0=() t1=()
	local pid start end
	wait_settled "${RESP_PORTS[@]}" || die "$1 nodes: the groups did not settle"
	for pid in "${SYSTEM_PIDS[@]}"; do t0+=("$(ticks "$pid")"); done
	start=${EPOCHREALTIME/[.,]/}
	sleep "$IDLE" # the measuring window, not a wait for a state
	end=${EPOCHREALTIME/[.,]/}
	for pid in "${SYSTEM_PIDS[@]}"; do t1+=("$(ticks "$pid")"); done
	IDLE_PCT=$(awk -v tick="$TICK" -v wall="$(((end - start) / 1000))e-3" -v t0="${t0[*]}" -v t1="${t1[*]}" 'BEGIN {
		n = split(t0, a, " "); split(t1, b, " ")
		for (i = 1; i <= n; i++) total += b[i] - a[i]
		printf "%.1f", total / tick / wall * 100 / n
	}')
}

MD_ROWS=()
notes=()
for n in "${NODES[@]}"; do
	start_lockd_nodes "$n" "${FLAGS[@]}"
	idle_cpu "$n"
	for mode in "${ROUTING[@]}"; do
		measure "$n" "$mode"
	done
	stop_system
done
RUN_END=$(date -u '+%Y-%m-%d %H:%M UTC')
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo "?")

placement="\`-groups $GROUPS_N -replicas $REPLICAS\`"
warning=""
if ((HAVE_REPLICAS == 0)); then
	placement="\`-groups $GROUPS_N\` without \`-replicas\` (this lockd has no such flag)"
	warning="**Warning:** \`${LOCKD_BIN##*/} -h\` lists no \`-replicas\`: every node hosts every group (a group has N voters), so this is not issue 49's $GROUPS_N groups × $REPLICAS replicas, and per-node CPU and fsyncs per operation cannot fall as nodes are added. Rerun once \`-replicas\` has landed."
fi
partial=()
[[ ${NODES[*]} == "$FULL_NODES" ]] || partial+=("nodes \`${NODES[*]}\` (SCALE_NODES; make bench-scale: \`$FULL_NODES\`)")
[[ ${ROUTING[*]} == "$FULL_ROUTING" ]] || partial+=("routing \`${ROUTING[*]}\` (SCALE_ROUTING; make bench-scale: \`$FULL_ROUTING\`)")
[[ $CLIENTS == "$FULL_CLIENTS" ]] || partial+=("$CLIENTS clients (SCALE_CLIENTS; make bench-scale: $FULL_CLIENTS)")
[[ $DURATION == "$FULL_DURATION" ]] || partial+=("runs of $DURATION (BENCH_DURATION; make bench-scale: $FULL_DURATION)")
cpu=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null) || true
fs=$(df --output=fstype "$work" 2>/dev/null | tail -n 1) || true
md="$work/scale.md"
{
	echo "# make bench-scale: the latest run"
	echo
	echo "<!-- Written by scripts/scale.sh (make bench-scale) at the end of each run; edits"
	echo "     are lost. Older runs are in this file's git history. -->"
	echo
	[[ -z $warning ]] || { echo "> $warning"; echo; }
	if ((${#partial[@]} > 0)); then
		list=${partial[0]}
		for p in "${partial[@]:1}"; do list+="; $p"; done
		echo "> **Not a full \`make bench-scale\`:** $list."
		echo
	fi
	echo "What the table shows, and why the total cannot grow on one machine:"
	echo "[the benchmarks page](../benchmarks.md#scale-out-make-bench-scale)."
	echo
	when="$RUN_START to $RUN_END"
	[[ ${RUN_START% *:*} == "${RUN_END% *:*}" ]] && when="${RUN_START% UTC} to ${RUN_END#* }"
	echo "- **When:** $when"
	if [[ $LOCKD_BIN == bin/lockd ]]; then
		echo "- **Commit:** \`${COMMIT:-unknown (not a git checkout)}\` (built with $(go env GOVERSION))"
	else
		echo "- **Commit:** the checkout is \`${COMMIT:-unknown}\`; the lockd measured is \`$LOCKD_BIN\` (LOCKD_BIN), built elsewhere"
	fi
	echo "- **Machine:** ${cpu:-$(uname -m)}, $(nproc) CPUs (nproc), $(uname -sr); the data in a temporary directory on ${fs:-?} (\`${TMPDIR:-/tmp}\`); load average (1, 5, 15 min) $LOAD_START at the start, $LOAD_END at the end"
	echo "- **Settings:** a fresh cluster per size on 127.0.0.1, $placement; uncontended \`LOCK.ACQUIRE\` → \`LOCK.RELEASE\` cycles, $CLIENTS clients, closed loop, one connection each, $DURATION per run, on each cluster first with the clients *spread* over all nodes (client *i* on node *i* mod N, which relays a name whose group it does not lead), then *direct* (\`lockbench -direct\`: each client on a group leader, with names that leader's groups hold, as a cluster-aware client routes them); each run starts once the groups have settled (every group led, nothing moving, and each group on its preferred leader or, placed, no leader or member changed for ${SETTLE} s)"
	echo
	echo "## Results"
	echo
	echo "clients: spread or direct (above). voters: the most voters of a group; hosted / leading: the most groups one node is a voter of / leads."
	echo "An operation is one \`LOCK.ACQUIRE\` or one \`LOCK.RELEASE\`. Latencies in ms. CPU: user + system time;"
	echo "ms per 1000 ops: all nodes together, and per node (that ÷ nodes); CPU per node: % of one core, idle (the settled cluster with no load, ${IDLE} s) and over the run (mean and max over the nodes)."
	echo "fsyncs/op: the synced writes of every node's shared Raft log (\`lockd_log_commits_total\`) per operation, summed over the nodes, and per node (that ÷ nodes)."
	echo "lockbench CPU: the load generator's, % of one core. Bytes between peers: not reported (no metric counts them)."
	echo
	echo "| nodes | clients | voters | hosted | leading | cycles/s | acquire p50 | acquire p99 | errors | CPU ms / 1000 ops | per node | CPU per node, idle % | CPU per node, mean % | CPU per node, max % | fsyncs/op | per node | lockbench CPU % |"
	echo "|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
	printf '%s\n' "${MD_ROWS[@]}"
	if ((${#notes[@]} > 0)); then
		echo
		printf -- '- %s\n' "${notes[@]}"
	fi
} >"$md"

echo
cat "$md"
if [[ -n $TABLE ]]; then
	mkdir -p "$(dirname "$TABLE")"
	# Into place atomically: a temporary file beside the destination, then mv.
	tmp=$(mktemp "$(dirname "$TABLE")/.$(basename "$TABLE").XXXXXX")
	if ! { cat "$md" >"$tmp" && chmod 644 "$tmp" && mv -f "$tmp" "$TABLE"; }; then
		rm -f "$tmp"
		die "could not write $TABLE"
	fi
	echo "scale.sh: wrote $TABLE" >&2
fi
