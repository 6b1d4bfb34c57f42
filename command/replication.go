package command

import "strconv"

// Entries of a node that follows a Redis master (REPLICAOF; issue 48). Both
// are internal (IsInternal) and need FeatureMigration.

// KindReplicated is a run of commands a Redis master sent, for one group:
// each command carries the replication offset just after it (End), and the
// group applies only those past the offset it has recorded, so a run sent
// again after a reconnect is applied once (ReplicatedArgs).
const KindReplicated Kind = 14

// KindReplication changes what a group records about the master it follows
// (ReplicationArgs): the master's address, the position to resume from, the
// group's offset.
const KindReplication Kind = 15

// ReplicatedCmd is one command of a KindReplicated entry. End is the
// master's replication offset just after the command, or 0 for a command
// that is not from the stream (a key of the RDB a full sync loads): always
// applied.
type ReplicatedCmd struct {
	End  int64
	Args [][]byte
}

// ReplicatedArgs is a KindReplicated entry's arguments: the offset the group
// records once it applied the run (0: leave it), then each command as its
// End, its argument count and its arguments.
func ReplicatedArgs(offset int64, cmds []ReplicatedCmd) [][]byte {
	out := [][]byte{strconv.AppendInt(nil, offset, 10)}
	for _, c := range cmds {
		out = append(out, strconv.AppendInt(nil, c.End, 10))
		out = appendCommands(out, [][][]byte{c.Args})
	}
	return out
}

// ParseReplicatedArgs is the inverse of ReplicatedArgs. The commands alias args.
func ParseReplicatedArgs(args [][]byte) (offset int64, cmds []ReplicatedCmd, err error) {
	if len(args) == 0 {
		return 0, nil, ErrCorrupt
	}
	offset, ok := ParseInt(args[0])
	if !ok {
		return 0, nil, ErrCorrupt
	}
	for i := 1; i < len(args); {
		end, ok := ParseInt(args[i])
		if !ok || i+1 >= len(args) {
			return 0, nil, ErrCorrupt
		}
		n, ok := ParseInt(args[i+1])
		if !ok || n < 1 || int64(len(args)-i-2) < n {
			return 0, nil, ErrCorrupt
		}
		cmds = append(cmds, ReplicatedCmd{End: end, Args: args[i+2 : i+2+int(n)]})
		i += 2 + int(n)
	}
	return offset, cmds, nil
}

// Replication is what a KindReplication entry sets. Exactly one of its
// parts is set per entry (Op says which).
type Replication struct {
	// Op: "master" sets Master ("" = follow none: REPLICAOF NO ONE);
	// "position" sets the position to resume from (group 0); "offset"
	// sets the group's own offset (a full sync's start, or its end).
	Op     string
	Master string // host:port
	ReplID string
	Offset int64
	DB     int64
}

// ReplicationArgs is a KindReplication entry's arguments.
func ReplicationArgs(r Replication) [][]byte {
	switch r.Op {
	case "master":
		return [][]byte{[]byte(r.Op), []byte(r.Master)}
	case "position":
		return [][]byte{[]byte(r.Op), []byte(r.ReplID), strconv.AppendInt(nil, r.Offset, 10), strconv.AppendInt(nil, r.DB, 10)}
	}
	return [][]byte{[]byte(r.Op), strconv.AppendInt(nil, r.Offset, 10)}
}

// ParseReplicationArgs is the inverse of ReplicationArgs.
func ParseReplicationArgs(args [][]byte) (Replication, error) {
	if len(args) == 0 {
		return Replication{}, ErrCorrupt
	}
	r := Replication{Op: string(args[0])}
	var ok bool
	switch {
	case r.Op == "master" && len(args) == 2:
		r.Master = string(args[1])
		return r, nil
	case r.Op == "position" && len(args) == 4:
		r.ReplID = string(args[1])
		r.Offset, ok = ParseInt(args[2])
		if !ok {
			return Replication{}, ErrCorrupt
		}
		if r.DB, ok = ParseInt(args[3]); !ok {
			return Replication{}, ErrCorrupt
		}
		return r, nil
	case r.Op == "offset" && len(args) == 2:
		if r.Offset, ok = ParseInt(args[1]); !ok {
			return Replication{}, ErrCorrupt
		}
		return r, nil
	}
	return Replication{}, ErrCorrupt
}
