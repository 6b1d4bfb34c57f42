package fsm

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
)

// Following a Redis master (REPLICAOF; issue 48). Every group records:
//
//   - master: the address it follows ("" = none). While set, clients'
//     writes are refused (READONLY, as on a Redis replica: the leader before
//     proposing, and the apply, where it decides: refuseWrite); only
//     KindReplicated entries write, and blocked pops wait (serveReady) so
//     that they take nothing the master's stream brings. Every group holds
//     the same (the node that takes REPLICAOF writes it to all of them).
//   - the link that may write (command.Link): masterAt, the logical index of
//     the last REPLICAOF entry, and epoch, the full sync the link loaded.
//     Entries of any other link (of a node that no longer leads group 0, of
//     an earlier REPLICAOF or full sync) are refused, so two links never
//     interleave their writes.
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
// The offsets hold only while the shard map stays as it is: slot moves are
// refused while the cluster follows a master (Node.moveSlots), and REPLICAOF
// while a slot is frozen.
//
// All of it is replicated state (snapshots, FeatureMigration) and decided by
// entries alone.
type replication struct {
	master   string
	masterAt uint64 // the name of the last REPLICAOF (any master, or none): command.Link.Since
	epoch    uint64 // the full sync the writing link loaded (command.Link.Epoch)
	offset   int64
	replID   string
	pos      int64
	db       int64
	halted   string           // group 0: what the link stopped at ("" = it runs), until the next REPLICAOF
	skipped  map[string]int64 // group 0: what was not imported under this REPLICAOF, by reason
}

// errStaleLink refuses an entry of a link other than the group's.
const errStaleLink = "ERR stale replication link (another REPLICAOF, full sync or node took over)"

// errNotFollowing refuses a KindReplicated entry applied after REPLICAOF NO
// ONE.
const errNotFollowing = "ERR this group follows no Redis master (REPLICAOF NO ONE)"

// ErrReadOnly is a Redis replica's answer to a client's write: the store's
// leaders refuse one before proposing it while the group follows a master,
// and the apply refuses one that got into the log (refuseWrite).
const ErrReadOnly = "READONLY You can't write against a read only replica."

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

// ReplicaOfSince names the last REPLICAOF (command.Link.Since): a new one,
// even of the same master, tells a link that stopped to start over.
func (k *Keyspace) ReplicaOfSince() uint64 { return k.repl.masterAt }

// ReplicationPosition is where a link resumes (group 0's record): the
// master's replication id ("" = never synced, or a full sync not finished),
// the offset and the selected database there, and the full sync the data
// comes from (the link's Epoch).
func (k *Keyspace) ReplicationPosition() (replID string, offset, db int64, epoch uint64) {
	return k.repl.replID, k.repl.pos, k.repl.db, k.repl.epoch
}

// linkOK reports whether l is the link that may write: the group follows a
// master, under l's REPLICAOF, and (unless anyEpoch) l's full sync.
func (k *Keyspace) linkOK(l command.Link, anyEpoch bool) bool {
	return k.repl.master != "" && l.Since == k.repl.masterAt && (anyEpoch || l.Epoch == k.repl.epoch)
}

// refuseTx is refuseWrite for a transaction: refused whole when one of its
// commands would be (Redis refuses such a command when it is queued).
func (k *Keyspace) refuseTx(tx command.Tx, c Ctx) (v resp.Value, refused bool) {
	if k.repl.master == "" || c.Replicated || !tx.WritesData() {
		return resp.Value{}, false
	}
	return resp.Error(ErrReadOnly), true
}

// refuseWrite is the apply's READONLY: while the group follows a master, a
// client's write (Redis's "write" flag, command.FlagDataWrite) is refused;
// refused reports it.
func (k *Keyspace) refuseWrite(spec *command.Spec, c Ctx) (v resp.Value, refused bool) {
	if k.repl.master == "" || c.Replicated || !spec.Flags.Has(command.FlagDataWrite) {
		return resp.Value{}, false
	}
	return resp.Error(ErrReadOnly), true
}

// ReplicationHalted is what the link stopped at under the current REPLICAOF
// ("" = it did not; group 0's record).
func (k *Keyspace) ReplicationHalted() string { return k.repl.halted }

// ReplicationSkipped is what was not imported under the current REPLICAOF,
// by reason (group 0's record; a copy).
func (k *Keyspace) ReplicationSkipped() map[string]int64 {
	out := make(map[string]int64, len(k.repl.skipped))
	for r, n := range k.repl.skipped {
		out[r] = n
	}
	return out
}

// maxSkipReasons bounds the reasons counted (a reason names a type, a
// database or a command: a master sending hundreds of unknown commands is
// hostile); later reasons are not counted.
const maxSkipReasons = 256

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
	switch {
	case r.Op == "master":
		switch {
		case r.Master == "":
			// REPLICAOF NO ONE: clients write from now on, so no later link
			// may continue this stream here (a Redis master that is promoted
			// takes a new replication id for the same reason).
			k.repl = replication{}
		case r.Master != k.repl.master:
			// Another master while following: the position stays, and the
			// new master continues it with a partial sync if it can (a
			// replica of the old one, promoted: a failover of the source),
			// else answers FULLRESYNC.
			k.repl.master = r.Master
		}
		k.repl.masterAt, k.repl.halted, k.repl.skipped = r.Link.Since, "", nil
	case !k.linkOK(r.Link, r.Op == "full" || r.Op == "halt" || r.Op == "skipped"):
		return resp.Error(errStaleLink)
	case r.Op == "skipped":
		if r.Offset > 0 && (len(k.repl.skipped) < maxSkipReasons || k.repl.skipped[r.Reason] > 0) {
			if k.repl.skipped == nil {
				k.repl.skipped = map[string]int64{}
			}
			k.repl.skipped[r.Reason] += r.Offset
		}
	case r.Op == "halt":
		k.repl.halted = r.Reason
	case r.Op == "full":
		k.repl.epoch, k.repl.offset = r.Link.Epoch, 0
		k.repl.replID, k.repl.pos, k.repl.db = "", 0, 0
	case r.Op == "position":
		k.repl.replID, k.repl.pos, k.repl.db = r.ReplID, r.Offset, r.DB
	case r.Op == "offset":
		k.repl.offset = r.Offset
	}
	return resp.OK
}

// applyReplicated is a KindReplicated entry: each command past the group's
// offset runs as a client's command would (End 0: always), then the offset
// becomes the entry's. The reply has one element per command: its reply, or
// nil for one skipped as applied before. An entry of another link is refused
// whole (errStaleLink), and so is one with a key of a slot this group does
// not serve (checkEntry).
func (k *Keyspace) applyReplicated(args [][]byte, c Ctx) resp.Value {
	if v, off := k.migrationOff(); off {
		return v
	}
	l, offset, cmds, err := command.ParseReplicatedArgs(args)
	if err != nil {
		panic(fmt.Sprintf("fsm: replicated entry: %v", err))
	}
	switch {
	case k.repl.master == "":
		// A run still in flight when REPLICAOF NO ONE applied: clients may
		// write now, and nothing the old master sends may overwrite them.
		return resp.Error(errNotFollowing)
	case !k.linkOK(l, false):
		return resp.Error(errStaleLink)
	}
	c.Replicated = true
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
	_, _, cmds, err := command.ParseReplicatedArgs(args)
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
	buf = binary.AppendUvarint(buf, r.epoch)
	buf = binary.AppendVarint(buf, r.offset)
	buf = binary.AppendUvarint(buf, uint64(len(r.replID)))
	buf = append(buf, r.replID...)
	buf = binary.AppendVarint(buf, r.pos)
	buf = binary.AppendVarint(buf, r.db)
	buf = binary.AppendUvarint(buf, uint64(len(r.halted)))
	buf = append(buf, r.halted...)
	reasons := make([]string, 0, len(r.skipped))
	for reason := range r.skipped {
		reasons = append(reasons, reason)
	}
	slices.Sort(reasons) // the same bytes on every replica
	buf = binary.AppendUvarint(buf, uint64(len(reasons)))
	for _, reason := range reasons {
		buf = binary.AppendUvarint(buf, uint64(len(reason)))
		buf = append(buf, reason...)
		buf = binary.AppendVarint(buf, r.skipped[reason])
	}
	return buf
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
	if r.epoch, err = binary.ReadUvarint(br); err != nil {
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
	halted, err := readBytes(br)
	if err != nil || len(halted) > 4096 {
		return errors.New("bad halt reason")
	}
	r.halted = string(halted)
	n, err := binary.ReadUvarint(br)
	if err != nil || n > maxSkipReasons {
		return errors.New("bad skipped count")
	}
	for ; n > 0; n-- {
		reason, err := readBytes(br)
		if err != nil || len(reason) > 4096 {
			return errors.New("bad skipped reason")
		}
		c, err := binary.ReadVarint(br)
		if err != nil {
			return err
		}
		if r.skipped == nil {
			r.skipped = map[string]int64{}
		}
		r.skipped[string(reason)] = c
	}
	k.repl = r
	return nil
}
