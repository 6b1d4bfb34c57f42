#!/usr/bin/env bash
# A local three-node lockd cluster: RESP on 6391-6393, peers on 7391-7393, HTTP
# on 8391-8393, data in ./cluster-data/nN, logs in ./cluster-data/nN.log.
#
#   deploy/cluster.sh start   # start the three nodes (idempotent), wait for a leader
#   deploy/cluster.sh stop    # stop the nodes this script started (pid files)
#   deploy/cluster.sh status  # RAFT MEMBERS and each node's role
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${LOCKD_BIN:-bin/lockd}
DATA=${CLUSTER_DATA:-cluster-data}
PEERS="n1=127.0.0.1:7391,n2=127.0.0.1:7392,n3=127.0.0.1:7393"

start() {
  mkdir -p "$DATA"
  for i in 1 2 3; do
    pidf="$DATA/n$i.pid"
    if [ -f "$pidf" ] && kill -0 "$(cat "$pidf")" 2>/dev/null; then
      echo "n$i already running (pid $(cat "$pidf"))"; continue
    fi
    "$BIN" -node-id "n$i" -peers "$PEERS" -addr "127.0.0.1:639$i" -peer-addr "127.0.0.1:739$i" \
      -http-addr "127.0.0.1:839$i" -data-dir "$DATA/n$i" >"$DATA/n$i.log" 2>&1 &
    echo $! >"$pidf"
    echo "n$i started (pid $!): redis-cli -p 639$i"
  done
  for _ in $(seq 1 100); do
    for i in 1 2 3; do
      if redis-cli -p "639$i" INFO raft 2>/dev/null | grep -q '^raft_state:leader'; then
        echo "leader: n$i (redis-cli -p 639$i)"; return 0
      fi
    done
    sleep 0.1
  done
  echo "no leader after 10s; see $DATA/n*.log" >&2; return 1
}

stop() {
  for i in 1 2 3; do
    pidf="$DATA/n$i.pid"
    [ -f "$pidf" ] || continue
    pid=$(cat "$pidf")
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid"
      for _ in $(seq 1 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
      echo "n$i stopped"
    fi
    rm -f "$pidf"
  done
}

status() {
  for i in 1 2 3; do
    printf 'n%s: ' "$i"
    redis-cli -p "639$i" INFO raft 2>/dev/null | grep -E '^raft_state' | tr -d '\r' || echo down
  done
}

case "${1:-start}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
