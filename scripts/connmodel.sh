#!/usr/bin/env bash
# connmodel.sh — how much CPU a durable SET costs in each connection model
# (redisproto/DESIGN.md, the event loop; the single node against Redis): redis-benchmark
# -t set at 64 clients against Redis (appendonly yes, appendfsync always), the
# three shapes of the toy server scripts/connmodel/connmodel.go (a goroutine
# per connection waiting for its batch's fdatasync; the same with the batcher
# writing the replies; one thread running an epoll loop) and a lockd single
# node, one after the other, each round in the same order, on 127.0.0.1.
# Prints per run the SETs/s, the ratio to Redis's in the same round and the
# server's CPU per SET (/proc ticks over the run).
# Environment: CM_ROUNDS (default 3), CM_REQUESTS (SETs per run, default 300000).
set -euo pipefail
cd "$(dirname "$0")/.."

die() {
	echo "connmodel.sh: $*" >&2
	exit 1
}

ROUNDS=${CM_ROUNDS:-3}
REQUESTS=${CM_REQUESTS:-300000}
[[ $ROUNDS =~ ^[1-9][0-9]*$ && $REQUESTS =~ ^[1-9][0-9]*$ ]] || die "CM_ROUNDS and CM_REQUESTS must be positive integers"
for tool in go redis-server redis-cli redis-benchmark; do
	command -v "$tool" >/dev/null || die "$tool is not on PATH (run 'make deps')"
done
mkdir -p bin
go build -o bin/lockd ./cmd/lockd
go build -o bin/connmodel scripts/connmodel/connmodel.go

LOCKD_BIN=bin/lockd
START_TIMEOUT=30
work=$(mktemp -d "${TMPDIR:-/tmp}/connmodel.XXXXXX")
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

declare -A PORTS=() SPIDS=()
SERVERS=(redis wait direct epoll lockd)
for s in "${SERVERS[@]}"; do
	case $s in
	redis | lockd) start_server "$s" ;;
	*)
		PORT=$(free_port)
		bin/connmodel -mode "$s" -port "$PORT" -file "$work/$s.dat" >"$work/$s.log" 2>&1 &
		SERVER_PID=$!
		pids+=("$SERVER_PID")
		wait_ping "$PORT" "$SERVER_PID" || { cat "$work/$s.log" >&2; die "connmodel -mode $s did not start"; }
		;;
	esac
	PORTS[$s]=$PORT SPIDS[$s]=$SERVER_PID
done

hz=$(getconf CLK_TCK)
printf '%-7s %5s %10s %10s %12s\n' server round SET/s /redis "us/SET"
for ((r = 1; r <= ROUNDS; r++)); do
	redis_rate=
	for s in "${SERVERS[@]}"; do
		t0=$(ticks "${SPIDS[$s]}")
		rate=$(redis-benchmark -h 127.0.0.1 -p "${PORTS[$s]}" -t set -c 64 -n "$REQUESTS" -q 2>/dev/null |
			awk '/requests per second/ { for (i = 1; i <= NF; i++) if ($(i + 1) == "requests") { print $i; exit } }')
		t1=$(ticks "${SPIDS[$s]}")
		[[ -n $rate ]] || die "redis-benchmark against $s reported nothing"
		[[ -n $redis_rate ]] || redis_rate=$rate
		awk -v s="$s" -v r="$r" -v rate="$rate" -v rr="$redis_rate" -v t=$((t1 - t0)) -v hz="$hz" -v n="$REQUESTS" \
			'BEGIN { printf "%-7s %5d %10.0f %10.2f %12.1f\n", s, r, rate, rate / rr, t / hz * 1e6 / n }'
	done
done
