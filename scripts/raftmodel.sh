#!/usr/bin/env bash
# raftmodel.sh — whether a node that drives all its Raft groups from one loop
# makes G groups cost what one group costs (raftstore/DESIGN.md, "The
# engine"): the toy cluster of scripts/raftmodel (3 node processes on
# 127.0.0.1 ports 19101-19103, go.etcd.io/raft/v3 RawNodes, 64 clients
# proposing to the groups' leaders) in two shapes: "shared", one driver
# goroutine per node for every group (one fdatasync and one frame per peer per
# loop turn for all groups), and "pergroup", a driver, a file and connections
# per group (the shape of one hashicorp/raft instance per group). Prints per
# run the ops/s and the node processes' CPU per operation.
# Environment: RM_ROUNDS (default 2), RM_DURATION (default 6s), RM_GROUPS
# (the larger group count, default 8).
set -euo pipefail
cd "$(dirname "$0")/raftmodel"

ROUNDS=${RM_ROUNDS:-2}
DURATION=${RM_DURATION:-6s}
GROUPS_N=${RM_GROUPS:-8}
[[ $ROUNDS =~ ^[1-9][0-9]*$ && $GROUPS_N =~ ^[1-9][0-9]*$ ]] || {
	echo "raftmodel.sh: RM_ROUNDS and RM_GROUPS must be positive integers" >&2
	exit 1
}
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/raftmodel" .
for ((r = 1; r <= ROUNDS; r++)); do
	for mode in shared pergroup; do
		for g in 1 "$GROUPS_N"; do
			timeout 120 "$bin/raftmodel" -mode "$mode" -groups "$g" -duration "$DURATION"
		done
	done
done
