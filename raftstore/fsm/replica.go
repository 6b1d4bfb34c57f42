package fsm

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
)

// Following a Redis master (REPLICAOF; issue 48). Every group records:
//
//   - master: the address it follows ("" = none). While set, the group's
//     leader refuses clients' writes (READONLY, as a Redis replica); only
//     KindReplicated entries write. Every group holds the same (the node
//     that takes REPLICAOF writes it to all of them).
//   - offset: the master's replication offset up to which every command of
//     the stream that belongs to this group is applied. A KindReplicated
//     entry applies only the commands past it, then raises it: a run sent
//     again after a reconnect (the link resumes from an earlier position)
//     is applied once.
//   - position (group 0): where the link resumes — the master's replication
//     id, an offset up to which every group has applied the stream, and the
//     database the stream had selected there. Zero while a full sync is in
//     progress, so that a link restarted mid-load asks for a full sync again.
//
// All of it is replicated state (snapshots, FeatureMigration) and decided by
// entries alone.
type replication struct {
	master   string
	masterAt uint64 // the logical index of the last REPLICAOF (any master, or none)
	offset int64
	replID string
	pos    int64
	db     int64
}

// errNotFollowing refuses a KindReplicated entry applied after REPLICAOF NO
// ONE.
const errNotFollowing = "ERR this group follows no Redis master (REPLICAOF NO ONE)"

// errReadOnly is a Redis replica's answer to a client's write.
const errReadOnly = "READONLY You can't write against a read only replica."

// ErrReadOnly is errReadOnly for the store's leaders, which refuse a client's
// write before proposing it while the group follows a master.
const ErrReadOnly = errReadOnly

// ErrMigrationOff refuses a migration entry while the group's settings have
// FeatureMigration off (a member may run a lockd without it).
const ErrMigrationOff = "ERR migration from Redis is off in this group until every member runs a lockd that has it (finish the upgrade)"

// migrationOff is the refusal of an entry that needs FeatureMigration while it
// is off, and whether to refuse.
func (k *Keyspace) migrationOff() (resp.Value, bool) {
	if k.settings.Features&command.FeatureMigration != 0 {
		return resp.Value{}, false
	}
	return resp.Error(ErrMigrationOff), true
}

// ReplicaOf is the address of the master the group follows ("" = none).
func (k *Keyspace) ReplicaOf() string { return k.repl.master }

// ReplicaOfSince is the logical index of the last REPLICAOF entry: a new one,
// even of the same master, tells a link that stopped to start over.
func (k *Keyspace) ReplicaOfSince() uint64 { return k.repl.masterAt }

// ReplicationPosition is where a link resumes (group 0's record): the
// master's replication id ("" = never synced, or a full sync not finished),
// the offset and the selected database there.
func (k *Keyspace) ReplicationPosition() (replID string, offset, db int64) {
	return k.repl.replID, k.repl.pos, k.repl.db
}

// ReplicationOffset is the group's own offset (see replication).
func (k *Keyspace) ReplicationOffset() int64 { return k.repl.offset }

// applyReplication is a KindReplication entry.
func (k *Keyspace) applyReplication(args [][]byte, c Ctx) resp.Value {
	if v, off := k.migrationOff(); off {
		return v
	}
	r, err := command.ParseReplicationArgs(args)
	if err != nil {
		panic(fmt.Sprintf("fsm: replication entry: %v", err))
	}
	switch r.Op {
	case "master":
		if r.Master != k.repl.master {
			// Another master (or none): what was recorded of the last one's
			// stream means nothing for the next.
			k.repl = replication{master: r.Master}
		}
		k.repl.masterAt = c.Index
	case "position":
		k.repl.replID, k.repl.pos, k.repl.db = r.ReplID, r.Offset, r.DB
	case "offset":
		k.repl.offset = r.Offset
	}
	return resp.OK
}

// applyReplicated is a KindReplicated entry: each command past the group's
// offset runs as a client's command would (End 0: always), then the offset
// becomes the entry's. The reply has one element per command: its reply, or
// nil for one skipped as applied before. Keys of slots this group does not
// serve refuse the whole entry (checkEntry), so no command is lost to a slot
// move: the link sends them again to the group that serves them.
func (k *Keyspace) applyReplicated(args [][]byte, c Ctx) resp.Value {
	if v, off := k.migrationOff(); off {
		return v
	}
	offset, cmds, err := command.ParseReplicatedArgs(args)
	if err != nil {
		panic(fmt.Sprintf("fsm: replicated entry: %v", err))
	}
	if k.repl.master == "" {
		// A run still in flight when REPLICAOF NO ONE applied: clients may
		// write now, and nothing the old master sends may overwrite them.
		return resp.Error(errNotFollowing)
	}
	out := make([]resp.Value, len(cmds))
	for i, cmd := range cmds {
		if i > 0 { // each command a logical index of its own, as in a batch entry
			k.base++
			c.Index = k.Logical()
		}
		if cmd.End != 0 && cmd.End <= k.repl.offset {
			out[i] = resp.Nil
			continue
		}
		op, spec, err := command.Parse(cmd.Args)
		switch {
		case err != nil:
			out[i] = errReply(err)
		case spec == nil:
			out[i] = resp.Error(fmt.Sprintf("ERR unknown command '%s'", cmd.Args[0]))
		default:
			c.Top = false // nothing a master sends blocks
			out[i] = k.Exec(op, c)
		}
	}
	if offset > k.repl.offset {
		k.repl.offset = offset
	}
	return resp.Array(out...)
}

// replicatedKeys lists the keys of a KindReplicated entry's commands, for
// checkEntry.
func replicatedKeys(args [][]byte) [][]byte {
	_, cmds, err := command.ParseReplicatedArgs(args)
	if err != nil {
		return nil
	}
	var keys [][]byte
	for _, c := range cmds {
		keys = append(keys, command.SlotKeys(c.Args)...)
	}
	return keys
}

// appendReplication appends r to a snapshot (version 7): the master, the
// group's offset, and the position (id, offset, database).
func appendReplication(buf []byte, r replication) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(r.master)))
	buf = append(buf, r.master...)
	buf = binary.AppendUvarint(buf, r.masterAt)
	buf = binary.AppendVarint(buf, r.offset)
	buf = binary.AppendUvarint(buf, uint64(len(r.replID)))
	buf = append(buf, r.replID...)
	buf = binary.AppendVarint(buf, r.pos)
	return binary.AppendVarint(buf, r.db)
}

// readReplication is appendReplication's inverse, into k.
func readReplication(br *bufio.Reader, k *Keyspace) error {
	master, err := readBytes(br)
	if err != nil || len(master) > 1024 {
		return errors.New("bad master address")
	}
	var r replication
	r.master = string(master)
	if r.masterAt, err = binary.ReadUvarint(br); err != nil {
		return err
	}
	if r.offset, err = binary.ReadVarint(br); err != nil {
		return err
	}
	id, err := readBytes(br)
	if err != nil || len(id) > 64 {
		return errors.New("bad replication id")
	}
	r.replID = string(id)
	if r.pos, err = binary.ReadVarint(br); err != nil {
		return err
	}
	if r.db, err = binary.ReadVarint(br); err != nil {
		return err
	}
	k.repl = r
	return nil
}
