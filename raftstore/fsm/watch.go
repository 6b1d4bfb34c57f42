package fsm

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"maps"

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
//
// Released values (issue 48). While the settings have FeatureMigration on, the
// tombstone of a string deleted by a lock release (the compare-and-delete of
// script.go's recipe or releaseEach, and nothing else) also keeps the xxh3
// digest of the value it held, so that a release by the owner that just
// released answers as that release did (releasedBefore). They are
// replicated too (snapshot version 7).

// live reports whether it is present at log time now (not past its deadline).
func (it *item) live(now int64) bool { return it.deadline == 0 || it.deadline > now }

// absentVersion marks the version of an absent key: logical indexes stay
// below 2^63, so no present key's version equals an absent key's.
const absentVersion = uint64(1) << 63

// maxTombstones bounds the tombstones a group keeps (about 40 bytes each, 30
// more with a released value).
const maxTombstones = 16384

// tombstones is the deletion record behind absent keys' versions.
type tombstones struct {
	at    map[uint64]uint64 // key hash -> logical index of its latest deletion
	order []tomb            // at's entries by deletion, oldest first (may hold stale ones)
	floor uint64            // every deletion not in at happened at or before floor
	// released holds, for the keys of at whose latest end was a lock
	// release's deletion of a live string while FeatureMigration was on,
	// the xxh3 digest of the value deleted (see releasedBefore). Its keys
	// are a subset of at's.
	released map[uint64]uint64
	// releasing, while set, names (by its hash) the key whose deletion is
	// a lock release's own: set by Keyspace.releaseDel just around that
	// DEL, within one apply, and never in a snapshot (see released).
	releasing    uint64
	releasingSet bool
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
	k.tombs = &tombstones{at: map[uint64]uint64{}, released: map[uint64]uint64{}, floor: k.Logical()}
}

// noteDeleted records that the entry being applied deleted it: a tombstone
// when it was present until now. Only a lock release's own deletion of a
// string (releaseDel), with FeatureMigration on, keeps the digest of its
// value; any other deletion — a DEL, GETDEL, FLUSHALL, RESTORE …
// REPLACE, an EXPIRE to the past, an expiry — ends any released value kept
// for its key, since its latest end is then not its owner's release.
func (k *Keyspace) noteDeleted(it *item) {
	t := k.tombs
	if t == nil {
		return
	}
	h := tombHash(it.key())
	if !it.live(k.now) {
		delete(t.released, h) // its latest end is this expiry, not a release
		return
	}
	idx := k.Logical()
	if prev, had := t.at[h]; !had || prev != idx {
		// A key deleted twice by one entry (a transaction or script: one
		// logical index) keeps one entry in order, as in at: order's live
		// entries are at's, which the snapshot counts.
		t.order = append(t.order, tomb{h, idx})
	}
	t.at[h] = idx
	if t.releasingSet && t.releasing == h && it.kind() == KindString && k.settings.Features&command.FeatureMigration != 0 {
		t.released[h] = xxh3.HashString(it.val())
	} else {
		delete(t.released, h)
	}
	for len(t.at) > maxTombstones {
		old := t.order[0]
		t.order = t.order[1:]
		if t.at[old.hash] == old.index {
			delete(t.at, old.hash)
			delete(t.released, old.hash)
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
		k.tombs.released = map[uint64]uint64{}
		return
	}
	k.items.Scan(func(it *item) bool {
		k.noteDeleted(it)
		return true
	})
}

// noteMoved records that it left the group with its slot (a slot move
// dropped it): its tombstone stays (its WATCH version changed here), but no
// released value, since nobody released it.
func (k *Keyspace) noteMoved(it *item) {
	if k.tombs != nil {
		delete(k.tombs.released, tombHash(it.key()))
	}
}

// releaseDel runs del, the DEL of key that a lock release (script.go
// recipe, releaseEach) sends once it found key holding the owner's value,
// marking the deletion of key as that release's own: noteDeleted keeps the
// digest of the value it removes. The mark is cleared before releaseDel
// returns, within the apply, so no other deletion is ever taken for a
// release.
func (k *Keyspace) releaseDel(key []byte, del func() resp.Value) resp.Value {
	t := k.tombs
	if t == nil {
		return del()
	}
	t.releasing, t.releasingSet = xxh3.Hash(key), true
	defer func() { t.releasing, t.releasingSet = 0, false }()
	return del()
}

// releasedBefore reports whether key, absent, was last deleted holding
// exactly val by an earlier lock release (the deletion is not this
// command's own), with the value recorded (FeatureMigration on at the
// deletion): the
// Redlock clients' release recipes (script.go recipe, releaseEach) then
// answer, with FeatureSameValueNX on, what the release answered, as a SET …
// NX of the value a key holds is a grant (sameGrant): the same owner asking
// again is the same operation. Redlock clients send their release through
// every node of one cluster at once; the first applied deletes the key and
// the others, finding it absent, would otherwise answer "already expired"
// (redsync's -1) or count fewer keys (node-redlock).
//
// It is safe: a release's success tells its owner that it held the grant
// until it released it, and it did. The digest is kept only when the key's
// most recent deletion was a release's own compare-and-delete (releaseDel),
// and is the value that release removed: another owner's grant and release
// in between leaves that owner's value, so the first owner's late release
// answers as Redis does (0, or redsync's -1). Any other deletion leaves no
// digest (noteDeleted): after a DEL, GETDEL, FLUSHALL or RESTORE …
// REPLACE by someone else, an EXPIRE or PEXPIREAT to the past, or the expiry
// of a lease that ran out (the key's expired item still in the tree, or its
// removal), the owner's release answers as Redis does, so an owner whose
// lock was taken from it hears that it was. A slot move leaves none either
// (noteMoved). Digests are 64-bit xxh3 of the
// values and keys are kept as 64-bit hashes: a false match needs two 64-bit
// collisions at once. A released value lives as long as its tombstone
// (maxTombstones, oldest dropped first): after that, the release answers
// as Redis does.
func (k *Keyspace) releasedBefore(key, val []byte) bool {
	t := k.tombs
	if t == nil || len(t.released) == 0 {
		return false
	}
	if _, present := k.items.Get(probe(key)); present {
		return false // present but expired: its end was an expiry
	}
	h := xxh3.Hash(key)
	d, ok := t.released[h]
	return ok && d == xxh3.Hash(val) && t.at[h] < k.Logical()
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
	return &tombstones{at: at, order: live, floor: t.floor, released: maps.Clone(t.released)}
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
	t := &tombstones{at: map[uint64]uint64{}, released: map[uint64]uint64{}}
	if t.floor, err = binary.ReadUvarint(br); err != nil {
		return err
	}
	// An earlier lockd listed a key deleted several times by one
	// entry once per deletion (noteDeleted): such a snapshot may hold more
	// than maxTombstones entries, repeated; they are read once each.
	n, err := binary.ReadUvarint(br)
	if err != nil || n > maxOldTombstones {
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
		if idx, had := t.at[e.hash]; had && idx == e.index {
			continue
		}
		t.at[e.hash] = e.index
		t.order = append(t.order, e)
	}
	if len(t.at) > maxTombstones {
		return errors.New("bad tombstone count")
	}
	k.tombs = t
	return nil
}

// maxOldTombstones bounds the tombstone entries a snapshot may list, repeats
// included (readTombstones): 16 bytes each at most, 16 MiB.
const maxOldTombstones = 1 << 20

// writeReleased appends the released values' digests to buf (snapshot
// version 7): their count, then hash and digest (8 bytes, little-endian) of
// each, in the tombstones' order (deletion order, so the bytes are the same
// on every replica).
func writeReleased(buf []byte, t *tombstones) []byte {
	if t == nil {
		return binary.AppendUvarint(buf, 0)
	}
	live := compactTombs(t)
	n := 0
	for _, e := range live {
		if _, ok := t.released[e.hash]; ok {
			n++
		}
	}
	buf = binary.AppendUvarint(buf, uint64(n))
	for _, e := range live {
		if d, ok := t.released[e.hash]; ok {
			buf = binary.AppendUvarint(buf, e.hash)
			buf = binary.LittleEndian.AppendUint64(buf, d)
		}
	}
	return buf
}

// readReleased reads what writeReleased wrote, after readTombstones: each
// digest must belong to a tombstone, at most once.
func readReleased(br *bufio.Reader, k *Keyspace) error {
	n, err := binary.ReadUvarint(br)
	if err != nil {
		return err
	}
	t := k.tombs
	if n > 0 && (t == nil || n > uint64(len(t.at))) {
		return errors.New("bad released count")
	}
	var d [8]byte
	for ; n > 0; n-- {
		h, err := binary.ReadUvarint(br)
		if err != nil {
			return err
		}
		if _, err := io.ReadFull(br, d[:]); err != nil {
			return err
		}
		if _, ok := t.at[h]; !ok {
			return errors.New("released value without a tombstone")
		}
		if _, dup := t.released[h]; dup {
			return errors.New("duplicate released value")
		}
		t.released[h] = binary.LittleEndian.Uint64(d[:])
	}
	return nil
}
