# Shared by the benchmark scripts (sourced, not run): process bookkeeping that
# stops only what the script started, free loopback ports, PING polling and
# reading lockbench's report tables.
# The sourcing script sets $work (a temp dir removed on exit), START_TIMEOUT,
# LOCKD_BIN and a die function before sourcing.

pids=() # every process this script started, and only those

# stop PID: SIGTERM, then SIGKILL if it is still there after 10 s; then reap it
# and forget it, so that a reused PID is never signalled.
stop() {
	local pid=$1 i
	if kill "$pid" 2>/dev/null; then
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

# cleanup: stop what is left, newest first (a client before its servers).
cleanup() {
	local rc=$? i
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		stop "${pids[i]}"
	done
	rm -rf "$work"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

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
			"$LOCKD_BIN" -addr "127.0.0.1:$PORT" -peer-addr 127.0.0.1:0 -http-addr "" \
				-data-dir "$dir" >"$log" 2>&1 &
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
