package command

import (
	"strconv"
	"strings"

	"github.com/lockd/lockd/outcome"
	"github.com/lockd/lockd/resp"
	"github.com/lockd/lockd/shard"
)

// Entry kinds of sharding (issue 7): moving a slot range from one Raft group to
// another, sessions used in several groups, and the replicated shard map. They
// are proposed by raftstore, never by a client; the FSM (raftstore/fsm,
// migrate.go) documents what each does.
const (
	// KindSessionAttach opens, in this group, a session that another group
	// opened (so that a lock of this group can be held by it). Args are
	// SessionAttachArgs(id, ttl), or SessionAttachOwnerArgs(id, ttl, owner)
	// once the group's settings turn owners on (FeatureOwners).
	KindSessionAttach Kind = 8
	// KindMigrate freezes, drops or thaws a slot range of this group. Args are
	// MigrateArgs(action, from, to).
	KindMigrate Kind = 9
	// KindImport inserts the items another group exported when it froze a slot
	// range. Args are ImportArgs(blob).
	KindImport Kind = 10
	// KindShardMap stores a newer version of the encoded shard.Map. Args are
	// ShardMapArgs(encoded).
	KindShardMap Kind = 11
)

// maxKind is the highest entry kind Decode accepts.
const maxKind = KindReplication

// The actions of a KindMigrate entry.
const (
	MigrateFreeze = "freeze" // slots leave: writes to them answer TRYAGAIN; the reply is the export
	MigrateDrop   = "drop"   // slots are gone: their items are deleted; entries answer MOVED
	MigrateThaw   = "thaw"   // an aborted move: the slots are this group's again
)

// Error prefixes of entries that touch a key of a slot in motion. Both are
// followed by the slot number: "TRYAGAIN slot 42 is moving to another group"
// while the slot is frozen, "MOVED 42" once it has left this group (the node
// appends the new owner's address before a client sees it, as Redis Cluster
// does).
const (
	TryAgainPrefix = "TRYAGAIN "
	MovedPrefix    = "MOVED "
)

// frozenPrefix begins TryAgainError's text.
const frozenPrefix = TryAgainPrefix + "slot "

// TryAgainError is the reply for a key of a frozen slot.
func TryAgainError(slot uint16) Error {
	return Error(frozenPrefix + strconv.Itoa(int(slot)) + " is moving to another group")
}

// MovedError is the reply for a key of a slot that has left this group.
func MovedError(slot uint16) Error {
	return Error(MovedPrefix + strconv.Itoa(int(slot)))
}

// ParseMoved reports whether msg (an error reply's text, without the dash) is
// MovedError's, and its slot.
func ParseMoved(msg string) (uint16, bool) {
	rest, ok := strings.CutPrefix(msg, MovedPrefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(rest, 10, 16)
	if err != nil || n >= shard.Slots {
		return 0, false
	}
	return uint16(n), true
}

// MovedReply is the reply for a key of a slot that has left this group:
// MovedError's text, outcome.Moved, the slot in Int.
func MovedReply(slot uint16) resp.Value {
	v := resp.Failed(outcome.Moved, string(MovedError(slot)))
	v.Int = int64(slot)
	return v
}

// MovingReply is the reply for a key of a frozen slot: TryAgainError's text,
// outcome.Moving, the slot in Int.
func MovingReply(slot uint16) resp.Value {
	v := resp.Failed(outcome.Moving, string(TryAgainError(slot)))
	v.Int = int64(slot)
	return v
}

// SessionAttachArgs is the argument vector of a KindSessionAttach entry.
func SessionAttachArgs(id uint64, ttl int64) [][]byte {
	return [][]byte{strconv.AppendUint(nil, id, 10), strconv.AppendInt(nil, ttl, 10)}
}

// ParseSessionAttachArgs is the inverse of SessionAttachArgs. The id must not
// be 0 and the TTL must be positive.
func ParseSessionAttachArgs(a [][]byte) (id uint64, ttl int64, err error) {
	if len(a) != 2 {
		return 0, 0, ErrCorrupt
	}
	id, err = strconv.ParseUint(string(a[0]), 10, 64)
	if err != nil || id == 0 {
		return 0, 0, ErrCorrupt
	}
	ttl, ok := ParseInt(a[1])
	if !ok || ttl <= 0 {
		return 0, 0, ErrCorrupt
	}
	return id, ttl, nil
}

// SessionAttachOwnerArgs is the argument vector of a KindSessionAttach entry
// for a session that belongs to owner (not empty). Only a group whose
// settings turn owners on may carry it: a replica from before owners refuses
// three arguments.
func SessionAttachOwnerArgs(id uint64, ttl int64, owner string) [][]byte {
	return append(SessionAttachArgs(id, ttl), []byte(owner))
}

// ParseSessionAttach parses SessionAttachArgs and SessionAttachOwnerArgs
// (owner "" for the first).
func ParseSessionAttach(a [][]byte) (id uint64, ttl int64, owner string, err error) {
	if len(a) == 3 {
		if len(a[2]) == 0 {
			return 0, 0, "", ErrCorrupt
		}
		owner, a = string(a[2]), a[:2]
	}
	id, ttl, err = ParseSessionAttachArgs(a)
	return id, ttl, owner, err
}

// MigrateArgs is the argument vector of a KindMigrate entry: action (one of
// MigrateFreeze, MigrateDrop, MigrateThaw) on slots from..to, inclusive.
func MigrateArgs(action string, from, to uint16) [][]byte {
	return [][]byte{[]byte(action), strconv.AppendUint(nil, uint64(from), 10), strconv.AppendUint(nil, uint64(to), 10)}
}

// ParseMigrateArgs is the inverse of MigrateArgs. It rejects an unknown action
// and a range that is empty or beyond shard.Slots.
func ParseMigrateArgs(a [][]byte) (action string, from, to uint16, err error) {
	if len(a) != 3 {
		return "", 0, 0, ErrCorrupt
	}
	action = string(a[0])
	switch action {
	case MigrateFreeze, MigrateDrop, MigrateThaw:
	default:
		return "", 0, 0, ErrCorrupt
	}
	f, err1 := strconv.ParseUint(string(a[1]), 10, 16)
	t, err2 := strconv.ParseUint(string(a[2]), 10, 16)
	if err1 != nil || err2 != nil || f > t || t >= shard.Slots {
		return "", 0, 0, ErrCorrupt
	}
	return action, uint16(f), uint16(t), nil
}

// ImportArgs is the argument vector of a KindImport entry: the export a
// freeze answered (its format belongs to the FSM).
func ImportArgs(blob []byte) [][]byte { return [][]byte{blob} }

// ParseImportArgs is the inverse of ImportArgs.
func ParseImportArgs(a [][]byte) ([]byte, error) {
	if len(a) != 1 {
		return nil, ErrCorrupt
	}
	return a[0], nil
}

// ShardMapArgs is the argument vector of a KindShardMap entry: a shard.Map's
// Encode.
func ShardMapArgs(encoded []byte) [][]byte { return [][]byte{encoded} }

// ParseShardMapArgs is the inverse of ShardMapArgs. It does not decode the map.
func ParseShardMapArgs(a [][]byte) ([]byte, error) {
	if len(a) != 1 {
		return nil, ErrCorrupt
	}
	return a[0], nil
}
