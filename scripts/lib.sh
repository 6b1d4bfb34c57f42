# Shared by the benchmark scripts (sourced, not run): process bookkeeping that
# stops only what the script started, processes' CPU ticks, free loopback
# ports, PING polling, starting a lockd cluster and waiting for its leaders to
# spread, and reading lockbench's report tables.
# The sourcing script sets $work (a temp dir removed on exit), START_TIMEOUT,
# LOCKD_BIN and a die function before sourcing.

pids=() # every process this script started, and only those

# stop PID: SIGTERM (and SIGCONT, for a process a script paused), then
# SIGKILL if it is still there after 10 s; then reap it and forget it, so that
# a reused PID is never signalled.
stop() {
	local pid=$1 i
	if kill "$pid" 2>/dev/null; then
		kill -CONT "$pid" 2>/dev/null || true
		for ((i = 0; i < 100; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null || true
	fi
	wait "$pid" 2>/dev/null || true
	forget "$pid"
}

# forget PID: drop a process that has been waited for from pids, so that its
# PID, which the system may reuse, is never signalled.
forget() {
	local i kept=()
	for i in ${pids[@]+"${pids[@]}"}; do
		[[ $i == "$1" ]] || kept+=("$i")
	done
	pids=(${kept[@]+"${kept[@]}"})
}

# cleanup: stop what is left, newest first (a client before its servers),
# after resuming everything a script paused: a lockd node stopping with its
# peers still paused waits for them (a leader hands over first) until stop
# kills it, 10 s later.
cleanup() {
	local rc=$? i
	for i in ${pids[@]+"${pids[@]}"}; do
		kill -CONT "$i" 2>/dev/null || true
	done
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		stop "${pids[i]}"
	done
	rm -rf "$work"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ticks PID...: the CPU time the processes used so far (user + system, clock
# ticks: getconf CLK_TCK a second).
ticks() {
	local t=0 p
	for p in "$@"; do
		t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat")))
	done
	echo "$t"
}

TICK=$(getconf CLK_TCK) # /proc/PID/stat's CPU times (ticks) are in these a second

# cpu_per_op TICKS OPS DECIMALS: CPU microseconds per operation from TICKS
# (ticks' clock ticks) over OPS operations; "-" unless both are numbers and
# OPS is positive.
cpu_per_op() {
	awk -v t="$1" -v n="$2" -v hz="$TICK" -v d="$3" 'BEGIN {
		if (t ~ /^[0-9]+$/ && n ~ /^[0-9.]+$/ && n > 0) printf "%.*f", d, t * 1e6 / hz / n; else print "-" }'
}

# info_raft HOST:PORT: the lockd node's INFO raft section, one field:value a
# line; empty when it does not answer within 2 s.
info_raft() {
	timeout 2 redis-cli -h "${1%:*}" -p "${1##*:}" INFO raft 2>/dev/null | tr -d '\r' || true
}

# free_port: a port on 127.0.0.1 that nothing listens on now, below the
# kernel's ephemeral range (ip_local_port_range), so that no outgoing
# connection (a cluster's peers dial each other while they start) can be
# handed it before the server binds it. Another process may still take it
# first; the start is then retried.
free_port() {
	local p i low=32768
	read -r low _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
	((low > 11024)) || low=32768 # a range that leaves too little below it: probe under the usual one
	for ((i = 0; i < 200; i++)); do
		p=$((10000 + RANDOM % (low - 10000)))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return 0
		fi
	done
	die "no free port found"
}

# free_ports N: N distinct free ports on 127.0.0.1, one a line.
free_ports() {
	local -A taken=()
	local p n=0
	while ((n < $1)); do
		p=$(free_port)
		[[ -z ${taken[$p]:-} ]] || continue
		taken[$p]=1
		echo "$p"
		n=$((n + 1))
	done
}

# field FILE TABLE ROW COLUMN: the value in a lockbench report's table whose
# header begins with TABLE (workload or op), in the row that begins with ROW,
# under the header named COLUMN; "-" when there is no such row.
field() {
	awk -v table="$2" -v row="$3" -v col="$4" '
		NF == 0 { intable = 0; next }
		$1 == table { intable = 1; idx = 0; for (i = 1; i <= NF; i++) if ($i == col) idx = i; next }
		intable && $1 == row && idx { print $idx; found = 1; exit }
		END { if (!found) print "-" }
	' "$1"
}

# wait_ping PORT PID: poll PING until PONG, while PID lives, for START_TIMEOUT s.
wait_ping() {
	local port=$1 pid=$2 deadline=$((SECONDS + START_TIMEOUT))
	while ((SECONDS < deadline)); do
		kill -0 "$pid" 2>/dev/null || return 1
		if [[ $(timeout 2 redis-cli -h 127.0.0.1 -p "$port" PING 2>/dev/null) == PONG ]]; then
			return 0
		fi
		sleep 0.1
	done
	return 1
}

# start_server redis|lockd: a fresh server (redis-server fsyncing every write, or
# $LOCKD_BIN) in its own directory, retried on a port race; sets PORT and
# SERVER_PID.
start_server() {
	local name=$1 attempt dir log
	for attempt in 1 2 3 4 5; do
		PORT=$(free_port)
		dir="$work/$name-$attempt"
		log="$work/$name-$attempt.log"
		mkdir -p "$dir"
		case $name in
		redis)
			redis-server --port "$PORT" --bind 127.0.0.1 --dir "$dir" --appendonly yes \
				--appendfsync always --save '' --daemonize no >"$log" 2>&1 &
			;;
		lockd)
			# one group, as lockd gives a single node, even with LOCKD_GROUPS
			# in the environment (compare.sh's knob for its cluster)
			"$LOCKD_BIN" -addr "127.0.0.1:$PORT" -peer-addr 127.0.0.1:0 -http-addr "" \
				-groups 1 -data-dir "$dir" >"$log" 2>&1 &
			;;
		esac
		SERVER_PID=$!
		pids+=("$SERVER_PID")
		if wait_ping "$PORT" "$SERVER_PID"; then
			return 0
		fi
		stop "$SERVER_PID"
		echo "$(basename "$0"): $name did not start on port $PORT (attempt $attempt); its log:" >&2
		tail -n 5 "$log" >&2
	done
	die "$name did not start"
}

ADDRS=""       # the system under test: its client addresses, leader first
SYSTEM_PIDS=() # the processes of the system being started

# stop_system: stop the processes of a system whose start failed.
stop_system() {
	local pid
	for pid in ${SYSTEM_PIDS[@]+"${SYSTEM_PIDS[@]}"}; do
		stop "$pid"
	done
	SYSTEM_PIDS=()
}

# wait_lockd_leader PORT...: poll INFO raft on every node until one is the
# leader and every node names it; prints the leader's index among the ports.
wait_lockd_leader() {
	local deadline=$((SECONDS + START_TIMEOUT)) i lead state leaders idx port info
	while ((SECONDS < deadline)); do
		leaders=() idx=-1
		i=0
		for port in "$@"; do
			info=$(info_raft "127.0.0.1:$port")
			lead=$(sed -n 's/^raft_leader://p' <<<"$info")
			state=$(sed -n 's/^raft_state://p' <<<"$info")
			leaders+=("$lead")
			[[ $state == leader ]] && idx=$i
			i=$((i + 1))
		done
		if ((idx >= 0)) && [[ -n ${leaders[0]} && ${leaders[0]} == "${leaders[1]}" && ${leaders[1]} == "${leaders[2]}" ]]; then
			echo "$idx"
			return 0
		fi
		sleep 0.2
	done
	return 1
}

# leader_first IDX ADDR...: the addresses as a comma list, the IDX-th first.
leader_first() {
	local idx=$1 i list
	shift
	local addrs=("$@")
	list=${addrs[idx]}
	for i in "${!addrs[@]}"; do
		((i == idx)) || list+=",${addrs[i]}"
	done
	echo "$list"
}

# start_lockd_cluster [GROUPS]: three lockd nodes with a fresh -peers
# configuration; sets ADDRS (leader of group 0 first) and SYSTEM_PIDS. With
# GROUPS the nodes run that many Raft groups (-groups, whatever LOCKD_GROUPS
# says). It returns once the cluster serves as a measured load should find it
# (lockd_leader_first). Retried when a port was taken meanwhile.
start_lockd_cluster() {
	local attempt i dir peers ports rp pp groups=${1:-} flags=()
	[[ -z $groups ]] || flags=(-groups "$groups")
	[[ ${LOCKD_ENGINE:-0} != 1 ]] || flags+=(-engine) # the node-wide Raft engine (lockd -engine)
	for attempt in 1 2 3; do
		mapfile -t ports < <(free_ports 6)
		rp=("${ports[@]:0:3}") pp=("${ports[@]:3:3}")
		peers="n1=127.0.0.1:${pp[0]},n2=127.0.0.1:${pp[1]},n3=127.0.0.1:${pp[2]}"
		dir=$(mktemp -d "$work/lockd-3.XXXXXX")
		SYSTEM_PIDS=()
		for i in 0 1 2; do
			mkdir -p "$dir/n$((i + 1))"
			"$LOCKD_BIN" ${flags[@]+"${flags[@]}"} -node-id "n$((i + 1))" -peers "$peers" -addr "127.0.0.1:${rp[i]}" \
				-peer-addr "127.0.0.1:${pp[i]}" -http-addr "" -data-dir "$dir/n$((i + 1))" \
				>"$dir/n$((i + 1)).log" 2>&1 &
			pids+=("$!")
			SYSTEM_PIDS+=("$!")
		done
		if wait_ping "${rp[0]}" "${SYSTEM_PIDS[0]}" && wait_ping "${rp[1]}" "${SYSTEM_PIDS[1]}" &&
			wait_ping "${rp[2]}" "${SYSTEM_PIDS[2]}" &&
			ADDRS=$(lockd_leader_first "127.0.0.1:${rp[0]}" "127.0.0.1:${rp[1]}" "127.0.0.1:${rp[2]}"); then
			return 0
		fi
		stop_system
		echo "${0##*/}: the lockd cluster did not start (attempt $attempt); its logs:" >&2
		tail -n 5 "$dir"/n*.log >&2
	done
	die "the lockd cluster did not start"
}

# lockd_leader_first ADDR...: waits (START_TIMEOUT each) until the three lockd
# nodes at ADDR... have spread their group leaders (spread) and agree on a
# leader, and prints ADDR... as a list with group 0's leader first. For a
# cluster just started, or resumed from a pause (its leaders' leases lapsed).
lockd_leader_first() {
	local idx
	spread "${1##*:}" && idx=$(wait_lockd_leader "${@##*:}") || return 1
	leader_first "$idx" "$@"
}

# spread PORT: wait until every group (RAFT GROUPS on PORT) is led by its
# preferred leader, group g by the (g mod n)-th of its n members in id order:
# the layout the nodes' balance loops settle on and then leave alone. A run
# started while they still hand groups over would see groups change leaders
# midway (a stall of each group moved, in its p99). The rule holds only while
# every node hosts every group, as on start_lockd_cluster's three nodes; on a
# placed cluster (-replicas below the node count) group 0's leader places the
# leaders, with no fixed layout: scale.sh's wait_settled waits there until no
# leader or member has changed for a few seconds instead.
spread() {
	local port=$1 deadline=$((SECONDS + START_TIMEOUT)) out
	while ((SECONDS < deadline)); do
		out=$(timeout 2 redis-cli -p "$port" RAFT GROUPS 2>/dev/null) || out=""
		[[ -n $out ]] && balanced <<<"$out" && return 0
		sleep 0.5
	done
	return 1
}

# balanced: whether the RAFT GROUPS reply on stdin (redis-cli's lines) lists
# groups each led by its preferred leader. A lone group is left where its
# election put it (there is nothing to spread): true whatever its leader.
balanced() {
	local key="" line g=-1 leader="" n=0 off=0 ids
	while IFS= read -r line; do
		case $key in
		group) g=$line ;;
		leader) leader=$line ;;
		members)
			mapfile -t ids < <(tr ';' '\n' <<<"$line" | sort)
			((${#ids[@]} > 0)) && [[ $leader == "${ids[g % ${#ids[@]}]}" ]] || off=$((off + 1))
			n=$((n + 1))
			;;
		esac
		key=$line
	done
	((n == 1 || (n > 1 && off == 0)))
}

RESP_PORTS=() # start_lockd_nodes: each node's RESP port, node n1 first
HTTP_PORTS=() # start_lockd_nodes: each node's HTTP port (/metrics), node n1 first

# start_lockd_nodes N [FLAG...]: N lockd nodes n1…nN of a fresh -peers cluster
# on 127.0.0.1, each with its RESP, peer and HTTP port and FLAG... added to
# its command line; returns once every node answers PING (not once its groups
# have leaders: the caller waits for what its load needs). Sets ADDRS (the
# RESP addresses as a comma list, n1 first), RESP_PORTS, HTTP_PORTS and
# SYSTEM_PIDS (stop_system stops them). Retried when a port was taken meanwhile.
start_lockd_nodes() {
	local n=$1 attempt i dir peers ports
	shift
	for attempt in 1 2 3; do
		mapfile -t ports < <(free_ports $((3 * n)))
		RESP_PORTS=("${ports[@]:0:n}") HTTP_PORTS=("${ports[@]:2*n:n}")
		peers="" ADDRS=""
		for ((i = 0; i < n; i++)); do
			peers+="${peers:+,}n$((i + 1))=127.0.0.1:${ports[n + i]}"
			ADDRS+="${ADDRS:+,}127.0.0.1:${RESP_PORTS[i]}"
		done
		dir=$(mktemp -d "$work/lockd-$n.XXXXXX")
		SYSTEM_PIDS=()
		for ((i = 0; i < n; i++)); do
			mkdir -p "$dir/n$((i + 1))"
			"$LOCKD_BIN" "$@" -node-id "n$((i + 1))" -peers "$peers" -addr "127.0.0.1:${RESP_PORTS[i]}" \
				-peer-addr "127.0.0.1:${ports[n + i]}" -http-addr "127.0.0.1:${HTTP_PORTS[i]}" \
				-data-dir "$dir/n$((i + 1))" >"$dir/n$((i + 1)).log" 2>&1 &
			pids+=("$!")
			SYSTEM_PIDS+=("$!")
		done
		for ((i = 0; i < n; i++)); do
			wait_ping "${RESP_PORTS[i]}" "${SYSTEM_PIDS[i]}" || break
		done
		((i == n)) && return 0
		stop_system
		echo "${0##*/}: the $n-node lockd cluster did not start (attempt $attempt); its logs:" >&2
		tail -n 5 "$dir"/n*.log >&2
	done
	die "the $n-node lockd cluster did not start"
}
