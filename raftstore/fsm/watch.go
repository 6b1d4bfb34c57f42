package fsm

import (
	"bufio"
	"encoding/binary"
	"errors"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
	"github.com/zeebo/xxh3"
)

// WATCH versions (issue 47). WATCH records each key's version and EXEC (an
// entry every replica applies) runs only if every version is unchanged. A
// present key's version is the logical index of the entry that last changed
// it (item.mod). An absent key's version must change too when the key was
// created and deleted again in between, as Redis's does (Redis touches a
// watched key on every write, whatever the key's state after it): so, once
// the group's settings turn command.FeatureWatchDeletes on, the group keeps
// tombstones — for each present key an entry deleted (deleteItem: a command,
// a lock's end, a slot handed to another group), the logical index of the
// deleting entry — and an absent key's version is absentVersion | that index,
// or absentVersion | the floor when no tombstone is kept for it.
//
// Tombstones are bounded (maxTombstones, oldest dropped first); dropping one
// raises the floor to its index, so a key whose tombstone was dropped still
// reads a version later than any WATCH taken before its deletion: a watch of
// an absent key across more than maxTombstones deletions may abort although
// the key did not change (never the reverse). Keys are kept as their 64-bit
// hashes: two keys sharing one can only cause such a spurious abort too.
//
// The state is replicated (snapshot version 6) and decided by entries alone:
// it starts empty, with the floor at the entry that turned the feature on, on
// every replica at once; before that, absent keys read version 0, as every
// earlier lockd reads them.

// live reports whether it is present at log time now (not past its deadline).
func (it *item) live(now int64) bool { return it.deadline == 0 || it.deadline > now }

// absentVersion marks the version of an absent key: logical indexes stay
// below 2^63, so no present key's version equals an absent key's.
const absentVersion = uint64(1) << 63

// maxTombstones bounds the tombstones a group keeps (about 40 bytes each).
const maxTombstones = 16384

// tombstones is the deletion record behind absent keys' versions.
type tombstones struct {
	at    map[uint64]uint64 // key hash -> logical index of its latest deletion
	order []tomb            // at's entries by deletion, oldest first (may hold stale ones)
	floor uint64            // every deletion not in at happened at or before floor
}

type tomb struct{ hash, index uint64 }

func tombHash(key string) uint64 { return xxh3.HashString(key) }

// watchDeletes reports whether the group keeps tombstones.
func (k *Keyspace) watchDeletes() bool {
	return k.settings.Features&command.FeatureWatchDeletes != 0
}

// errCollectionsOff refuses a sorted set or list write while the group's
// settings have FeatureCollections off: a member of the group may run a
// lockd that does not hold those kinds (a rolling upgrade in progress).
const errCollectionsOff = "ERR sorted sets and lists are off in this group until every member runs a lockd that has them (finish the upgrade)"

// collectionsOff refuses a sorted set or list write (its reply, true) while
// FeatureCollections is off. Deterministic: the settings are replicated.
func (k *Keyspace) collectionsOff() (resp.Value, bool) {
	if k.settings.Features&command.FeatureCollections != 0 {
		return resp.Value{}, false
	}
	return resp.Error(errCollectionsOff), true
}

// startTombstones is called when the settings turn FeatureWatchDeletes on.
func (k *Keyspace) startTombstones() {
	k.tombs = &tombstones{at: map[uint64]uint64{}, floor: k.Logical()}
}

// noteDeleted records that the entry being applied deleted key, which was
// present until now.
func (k *Keyspace) noteDeleted(key string) {
	t := k.tombs
	if t == nil {
		return
	}
	h, idx := tombHash(key), k.Logical()
	t.at[h] = idx
	t.order = append(t.order, tomb{h, idx})
	for len(t.at) > maxTombstones {
		old := t.order[0]
		t.order = t.order[1:]
		if t.at[old.hash] == old.index {
			delete(t.at, old.hash)
			t.floor = max(t.floor, old.index)
		}
	}
	if len(t.order) > 2*maxTombstones { // stale entries of keys deleted again
		t.order = compactTombs(t)
	}
}

// compactTombs returns t.order without its stale entries.
func compactTombs(t *tombstones) []tomb {
	live := make([]tomb, 0, len(t.at))
	for _, e := range t.order {
		if t.at[e.hash] == e.index {
			live = append(live, e)
		}
	}
	return live
}

// noteFlush records FLUSHALL's deletion of every present key: one tombstone
// each while they fit, else the floor moves to this entry (every absent key's
// version changes).
func (k *Keyspace) noteFlush() {
	if k.tombs == nil {
		return
	}
	if k.items.Len() > maxTombstones {
		k.tombs.at, k.tombs.order, k.tombs.floor = map[uint64]uint64{}, nil, k.Logical()
		return
	}
	k.items.Scan(func(it *item) bool {
		if it.live(k.now) {
			k.noteDeleted(it.key())
		}
		return true
	})
}

// absentVersionOf is an absent key's WATCH version.
func (k *Keyspace) absentVersionOf(key []byte) uint64 {
	t := k.tombs
	if t == nil {
		return 0
	}
	if idx, ok := t.at[xxh3.Hash(key)]; ok {
		return absentVersion | idx
	}
	return absentVersion | t.floor
}

// clone returns a copy of t for a snapshot (nil for nil).
func (t *tombstones) clone() *tombstones {
	if t == nil {
		return nil
	}
	live := compactTombs(t)
	at := make(map[uint64]uint64, len(live))
	for _, e := range live {
		at[e.hash] = e.index
	}
	return &tombstones{at: at, order: live, floor: t.floor}
}

// writeTombstones appends the tombstones to buf (snapshot version 6).
func writeTombstones(buf []byte, t *tombstones) []byte {
	if t == nil {
		return binary.AppendUvarint(buf, 0) // not kept
	}
	buf = binary.AppendUvarint(buf, 1)
	buf = binary.AppendUvarint(buf, t.floor)
	live := compactTombs(t)
	buf = binary.AppendUvarint(buf, uint64(len(live)))
	for _, e := range live {
		buf = binary.AppendUvarint(buf, e.hash)
		buf = binary.AppendUvarint(buf, e.index)
	}
	return buf
}

// readTombstones reads what writeTombstones wrote.
func readTombstones(br *bufio.Reader, k *Keyspace) error {
	kept, err := binary.ReadUvarint(br)
	if err != nil || kept > 1 {
		return errors.New("bad tombstones flag")
	}
	if kept == 0 {
		return nil
	}
	t := &tombstones{at: map[uint64]uint64{}}
	if t.floor, err = binary.ReadUvarint(br); err != nil {
		return err
	}
	n, err := binary.ReadUvarint(br)
	if err != nil || n > maxTombstones {
		return errors.New("bad tombstone count")
	}
	for ; n > 0; n-- {
		var e tomb
		if e.hash, err = binary.ReadUvarint(br); err != nil {
			return err
		}
		if e.index, err = binary.ReadUvarint(br); err != nil {
			return err
		}
		t.at[e.hash] = e.index
		t.order = append(t.order, e)
	}
	k.tombs = t
	return nil
}
