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

// Link names the link that writes an entry, so that a group refuses entries
// of any other (a link of a node that no longer leads group 0, of an earlier
// REPLICAOF, or of an earlier full sync): Since names the REPLICAOF it
// follows (chosen by the node that took it, the same in every group), Epoch
// the full sync it loaded (chosen by the link at the sync's start; 0 before
// any).
type Link struct {
	Since, Epoch uint64
}

// ReplicatedArgs is a KindReplicated entry's arguments: the link, the offset
// the group records once it applied the run (0: leave it), then each command
// as its End, its argument count and its arguments.
func ReplicatedArgs(l Link, offset int64, cmds []ReplicatedCmd) [][]byte {
	out := [][]byte{strconv.AppendUint(nil, l.Since, 10), strconv.AppendUint(nil, l.Epoch, 10), strconv.AppendInt(nil, offset, 10)}
	for _, c := range cmds {
		out = append(out, strconv.AppendInt(nil, c.End, 10))
		out = appendCommands(out, [][][]byte{c.Args})
	}
	return out
}

// ParseReplicatedArgs is the inverse of ReplicatedArgs. The commands alias args.
func ParseReplicatedArgs(args [][]byte) (l Link, offset int64, cmds []ReplicatedCmd, err error) {
	if len(args) < 3 {
		return l, 0, nil, ErrCorrupt
	}
	var ok bool
	if l, ok = parseLink(args[0], args[1]); !ok {
		return l, 0, nil, ErrCorrupt
	}
	if offset, ok = ParseInt(args[2]); !ok {
		return l, 0, nil, ErrCorrupt
	}
	for i := 3; i < len(args); {
		end, ok := ParseInt(args[i])
		if !ok || i+1 >= len(args) {
			return l, 0, nil, ErrCorrupt
		}
		n, ok := ParseInt(args[i+1])
		if !ok || n < 1 || int64(len(args)-i-2) < n {
			return l, 0, nil, ErrCorrupt
		}
		cmds = append(cmds, ReplicatedCmd{End: end, Args: args[i+2 : i+2+int(n)]})
		i += 2 + int(n)
	}
	return l, offset, cmds, nil
}

func parseLink(since, epoch []byte) (Link, bool) {
	a, err1 := strconv.ParseUint(string(since), 10, 64)
	b, err2 := strconv.ParseUint(string(epoch), 10, 64)
	return Link{Since: a, Epoch: b}, err1 == nil && err2 == nil
}

// Replication is what a KindReplication entry sets (Op says what).
type Replication struct {
	// Op: "master" sets Master ("" = follow none: REPLICAOF NO ONE) and
	// the REPLICAOF's name (Link.Since);
	// "full" starts a full sync of Link (its Epoch becomes the group's,
	// the group's offset and group 0's position are cleared); "offset"
	// sets the group's own offset (a full sync's end); "position" sets the
	// position to resume from (group 0); "halt" records that the link
	// stopped at what it cannot import (Reason, in group 0), until the next
	// REPLICAOF; "skipped" adds Offset to the count of what was not imported
	// for Reason (group 0). All but "master" are refused unless Link is the
	// group's (Link.Since its REPLICAOF, and, but for "full", "halt" and
	// "skipped", Link.Epoch its sync).
	Op     string
	Master string // host:port
	Link   Link
	ReplID string
	Reason string // "halt", "skipped": what the link stopped at, or skipped (sent in ReplID's place)
	Offset int64
	DB     int64
}

// ReplicationArgs is a KindReplication entry's arguments.
func ReplicationArgs(r Replication) [][]byte {
	if r.Op == "master" {
		return [][]byte{[]byte(r.Op), []byte(r.Master), strconv.AppendUint(nil, r.Link.Since, 10)}
	}
	id := r.ReplID
	if r.Op == "halt" || r.Op == "skipped" {
		id = r.Reason
	}
	return [][]byte{[]byte(r.Op), strconv.AppendUint(nil, r.Link.Since, 10), strconv.AppendUint(nil, r.Link.Epoch, 10),
		[]byte(id), strconv.AppendInt(nil, r.Offset, 10), strconv.AppendInt(nil, r.DB, 10)}
}

// ParseReplicationArgs is the inverse of ReplicationArgs.
func ParseReplicationArgs(args [][]byte) (Replication, error) {
	if len(args) == 0 {
		return Replication{}, ErrCorrupt
	}
	r := Replication{Op: string(args[0])}
	switch {
	case r.Op == "master" && len(args) == 3:
		r.Master = string(args[1])
		var err error
		if r.Link.Since, err = strconv.ParseUint(string(args[2]), 10, 64); err == nil {
			return r, nil
		}
	case (r.Op == "full" || r.Op == "offset" || r.Op == "position" || r.Op == "halt" || r.Op == "skipped") && len(args) == 6:
		var ok, ok2, ok3 bool
		r.Link, ok = parseLink(args[1], args[2])
		if r.Op == "halt" || r.Op == "skipped" {
			r.Reason = string(args[3])
		} else {
			r.ReplID = string(args[3])
		}
		r.Offset, ok2 = ParseInt(args[4])
		r.DB, ok3 = ParseInt(args[5])
		if ok && ok2 && ok3 {
			return r, nil
		}
	}
	return Replication{}, ErrCorrupt
}
