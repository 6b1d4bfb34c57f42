package fsm

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/shard"
	"github.com/tidwall/btree"
)

// Snapshot is a point-in-time copy of a keyspace. Taking one is O(1) (the trees
// are copy-on-write); writing it out may run concurrently with further Applies.
type Snapshot struct {
	scripts  map[string][]byte // sha -> source
	sessions []sessionCopy
	items    *btree.BTreeG[*item]
	nss      []Namespace
	acl      *command.ACLTable
	now      int64
	index    uint64
	base     uint64
	frozen   slotRanges // never changed in place: shared with the keyspace
	gone     slotRanges
	shardMap []byte
	settings command.Settings
	tombs    *tombstones               // a copy (watch.go); nil while not kept
	pops     *btree.BTreeG[*popWaiter] // the blocked pops, a copy (bpop.go); nil: none
	repl     replication               // the Redis master followed (replica.go)
}

// Snapshot captures the current state. Call it from the apply goroutine.
func (k *Keyspace) Snapshot() *Snapshot {
	// Items in the trees are immutable (changes replace them), so sharing them
	// with the copy is safe.
	var sessions []sessionCopy
	for _, si := range k.Sessions() {
		s := k.sessions[si.ID]
		sessions = append(sessions, sessionCopy{id: si.ID, ttl: s.ttl, name: s.name, owner: s.owner, locks: append([]string(nil), s.locks...)})
	}
	return &Snapshot{items: k.items.Copy(), now: k.now, index: k.index, scripts: k.scripts.Scripts(), sessions: sessions, nss: k.namespaces, acl: k.acl,
		base: k.base, frozen: k.frozen, gone: k.gone, shardMap: k.shardMap, settings: k.settings, tombs: k.tombs.clone(),
		pops: k.popsCopy(), repl: k.repl}
}

// snapVersion 2 added waiters, lock-delay and grant index to lock records, the
// wake time to items and the namespaces; 3 appended the ACL users after the
// namespaces; 4 appended the token base, the frozen and the gone slot ranges
// and the shard map (migrate.go); 5 appended the settings (KindSettings) and
// the sessions' owners; 6 appended the tombstones (watch.go) and may hold
// sorted sets and lists; 7 appended the released values' digests kept with
// the tombstones (watch.go) and what the group records of the Redis master it
// follows (replica.go). Restore still reads versions 1 to 6. WriteTo
// writes version 4 while the settings are unset and no session has an
// owner, 5 until the settings turn FeatureWatchDeletes or FeatureCollections
// on, and 6 until they turn FeatureMigration on, so that a node of an
// earlier version can install the snapshots of a group that it is still a
// member of (those features wait for every member).
const snapVersion = 7

// ErrBadSnapshot is returned by Restore for a stream that is not a snapshot.
var ErrBadSnapshot = errors.New("fsm: bad snapshot")

// WriteTo writes the snapshot in a versioned binary form.
func (s *Snapshot) WriteTo(w io.Writer) (int64, error) {
	bw := bufio.NewWriterSize(w, 1<<16)
	version := byte(4)
	owned := 0
	for _, ss := range s.sessions {
		if ss.owner != "" {
			owned++
		}
	}
	if owned > 0 || s.settings != (command.Settings{}) {
		version = 5
	}
	if s.settings.Features&(command.FeatureWatchDeletes|command.FeatureCollections) != 0 || s.pops != nil {
		version = 6
	}
	if s.settings.Features&command.FeatureMigration != 0 {
		version = 7
	}
	var hdr []byte
	hdr = append(hdr, 'L', 'K', 'S', version)
	hdr = binary.AppendVarint(hdr, s.now)
	hdr = binary.AppendUvarint(hdr, s.index)
	hdr = binary.AppendUvarint(hdr, uint64(s.items.Len()))
	n, err := bw.Write(hdr)
	total := int64(n)
	if err != nil {
		return total, err
	}
	var buf []byte
	s.items.Scan(func(it *item) bool {
		buf = buf[:0]
		kind := it.kind()
		buf = append(buf, byte(kind))
		buf = binary.AppendUvarint(buf, uint64(len(it.key())))
		buf = append(buf, it.key()...)
		switch kind {
		case KindLock:
			buf = append(buf, byte(it.lock.mode))
			buf = binary.AppendVarint(buf, it.lock.limit())
			buf = binary.AppendUvarint(buf, uint64(it.lock.numHolders()))
			for h := range it.holders {
				buf = binary.AppendUvarint(buf, uint64(len(h.owner)))
				buf = append(buf, h.owner...)
				buf = binary.AppendUvarint(buf, h.session)
				buf = binary.AppendUvarint(buf, h.token)
				buf = binary.AppendVarint(buf, h.count)
				buf = binary.AppendVarint(buf, h.since)
				buf = binary.AppendVarint(buf, h.deadline)
				buf = binary.AppendUvarint(buf, h.via)
			}
			buf = binary.AppendUvarint(buf, uint64(it.lock.numWaiters()))
			for _, w := range it.lock.waiters() {
				buf = binary.AppendUvarint(buf, w.id)
				buf = binary.AppendUvarint(buf, uint64(len(w.owner)))
				buf = append(buf, w.owner...)
				buf = binary.AppendUvarint(buf, w.session)
				buf = binary.AppendVarint(buf, w.ttl)
				buf = append(buf, byte(w.mode))
				buf = binary.AppendVarint(buf, w.limit)
				if w.reentrant {
					buf = append(buf, 1)
				} else {
					buf = append(buf, 0)
				}
				buf = binary.AppendVarint(buf, w.since)
				buf = binary.AppendVarint(buf, w.deadline)
			}
			buf = binary.AppendVarint(buf, it.lock.delay())
			buf = binary.AppendVarint(buf, it.lock.lockDelay())
			buf = binary.AppendUvarint(buf, it.granted())
			buf = binary.AppendVarint(buf, it.lock.wake())
		case KindHash:
			buf = binary.AppendUvarint(buf, uint64(len(it.coll.fields)))
			for _, f := range it.coll.fields {
				buf = binary.AppendUvarint(buf, uint64(len(f.name)))
				buf = append(buf, f.name...)
				buf = binary.AppendUvarint(buf, uint64(len(f.val)))
				buf = append(buf, f.val...)
			}
		case KindZSet:
			buf = appendZSet(buf, it.coll.zset) // zset.go
		case KindList:
			buf = appendList(buf, it.coll.list) // list.go
		default:
			buf = binary.AppendUvarint(buf, uint64(len(it.val())))
			buf = append(buf, it.val()...)
		}
		buf = binary.AppendVarint(buf, it.deadline)
		buf = binary.AppendUvarint(buf, it.token)
		buf = binary.AppendUvarint(buf, it.mod)
		n, err = bw.Write(buf)
		total += int64(n)
		return err == nil
	})
	if err != nil {
		return total, err
	}
	// The script cache, in SHA order.
	shas := make([]string, 0, len(s.scripts))
	for sha := range s.scripts {
		shas = append(shas, sha)
	}
	sort.Strings(shas)
	buf = binary.AppendUvarint(buf[:0], uint64(len(shas)))
	for _, sha := range shas {
		buf = binary.AppendUvarint(buf, uint64(len(s.scripts[sha])))
		buf = append(buf, s.scripts[sha]...)
	}
	n, err = bw.Write(buf)
	total += int64(n)
	if err != nil {
		return total, err
	}
	// Sessions, by id.
	buf = binary.AppendUvarint(buf[:0], uint64(len(s.sessions)))
	for _, ss := range s.sessions {
		buf = binary.AppendUvarint(buf, ss.id)
		buf = binary.AppendVarint(buf, ss.ttl)
		buf = binary.AppendUvarint(buf, uint64(len(ss.name)))
		buf = append(buf, ss.name...)
		buf = binary.AppendUvarint(buf, uint64(len(ss.locks)))
		for _, l := range ss.locks {
			buf = binary.AppendUvarint(buf, uint64(len(l)))
			buf = append(buf, l...)
		}
	}
	// Namespaces, by prefix.
	buf = binary.AppendUvarint(buf, uint64(len(s.nss)))
	for _, ns := range s.nss {
		buf = binary.AppendUvarint(buf, uint64(len(ns.Prefix)))
		buf = append(buf, ns.Prefix...)
		for _, v := range []int64{ns.MaxTTL, ns.DefaultTTL, ns.MaxWaiters, ns.Rate, ns.LockDelay} {
			buf = binary.AppendVarint(buf, v)
		}
		buf = binary.AppendUvarint(buf, uint64(len(ns.Safety)))
		buf = append(buf, ns.Safety...)
		buf = binary.AppendUvarint(buf, uint64(len(ns.FencedBy)))
		buf = append(buf, ns.FencedBy...)
	}
	// ACL users, by name (acl.go).
	buf = appendUsers(buf, s.acl)
	// Sharding (migrate.go): token base, frozen and gone ranges, shard map.
	buf = binary.AppendUvarint(buf, s.base)
	for _, rs := range []slotRanges{s.frozen, s.gone} {
		buf = binary.AppendUvarint(buf, uint64(len(rs)))
		for _, r := range rs {
			buf = binary.AppendUvarint(buf, uint64(r.From))
			buf = binary.AppendUvarint(buf, uint64(r.To))
		}
	}
	buf = binary.AppendUvarint(buf, uint64(len(s.shardMap)))
	buf = append(buf, s.shardMap...)
	if version >= 5 {
		// Settings, then the owned sessions' owners by id (session.go).
		buf = binary.AppendUvarint(buf, s.settings.Features)
		buf = binary.AppendVarint(buf, s.settings.MaxSessionsPerUser)
		buf = binary.AppendUvarint(buf, uint64(owned))
		for _, ss := range s.sessions {
			if ss.owner != "" {
				buf = binary.AppendUvarint(buf, ss.id)
				buf = binary.AppendUvarint(buf, uint64(len(ss.owner)))
				buf = append(buf, ss.owner...)
			}
		}
	}
	if version >= 6 {
		buf = writeTombstones(buf, s.tombs) // watch.go
		buf = appendPops(buf, s.pops)       // bpop.go
	}
	if version >= 7 {
		buf = writeReleased(buf, s.tombs)    // watch.go
		buf = appendReplication(buf, s.repl) // replica.go
	}
	n, err = bw.Write(buf)
	total += int64(n)
	if err != nil {
		return total, err
	}
	return total, bw.Flush()
}

func readNamespaces(br *bufio.Reader, k *Keyspace) error {
	n, err := binary.ReadUvarint(br)
	if err != nil || n > 1<<32 {
		return errors.New("bad namespace count")
	}
	for ; n > 0; n-- {
		p, err := readBytes(br)
		if err != nil {
			return err
		}
		ns := Namespace{Prefix: string(p)}
		for _, dst := range []*int64{&ns.MaxTTL, &ns.DefaultTTL, &ns.MaxWaiters, &ns.Rate, &ns.LockDelay} {
			if *dst, err = binary.ReadVarint(br); err != nil {
				return err
			}
		}
		safety, err := readBytes(br)
		if err != nil {
			return err
		}
		fenced, err := readBytes(br)
		if err != nil {
			return err
		}
		ns.Safety, ns.FencedBy = string(safety), string(fenced)
		k.namespaces = append(k.namespaces, ns)
	}
	return nil
}

// readSharding reads what version 4 appended: the token base, the frozen and
// the gone slot ranges and the shard map.
func readSharding(br *bufio.Reader, k *Keyspace) error {
	var err error
	if k.base, err = binary.ReadUvarint(br); err != nil {
		return err
	}
	for _, dst := range []*slotRanges{&k.frozen, &k.gone} {
		n, err := binary.ReadUvarint(br)
		if err != nil || n > shard.Slots {
			return errors.New("bad range count")
		}
		for ; n > 0; n-- {
			from, err1 := binary.ReadUvarint(br)
			to, err2 := binary.ReadUvarint(br)
			if err1 != nil || err2 != nil || from > to || to >= shard.Slots {
				return errors.New("bad slot range")
			}
			*dst = dst.add(uint16(from), uint16(to))
		}
	}
	m, err := readBytes(br)
	if err != nil {
		return err
	}
	if len(m) > 0 {
		sm, err := shard.Decode(m)
		if err != nil {
			return err
		}
		k.shardMap, k.shardVer = m, sm.Version
	}
	return nil
}

type sessionCopy struct {
	id    uint64
	ttl   int64
	name  []byte
	owner string
	locks []string
}

// readOwners reads what version 5 appended: the settings and the owners of
// the sessions that have one (each must be a session the snapshot holds, at
// most once).
func readOwners(br *bufio.Reader, k *Keyspace) error {
	var err error
	if k.settings.Features, err = binary.ReadUvarint(br); err != nil {
		return err
	}
	if k.settings.MaxSessionsPerUser, err = binary.ReadVarint(br); err != nil || k.settings.MaxSessionsPerUser < 0 {
		return errors.New("bad session cap")
	}
	n, err := binary.ReadUvarint(br)
	if err != nil || n > uint64(len(k.sessions)) {
		return errors.New("bad owner count")
	}
	for ; n > 0; n-- {
		id, err := binary.ReadUvarint(br)
		if err != nil {
			return err
		}
		owner, err := readString(br)
		if err != nil {
			return err
		}
		s, ok := k.sessions[id]
		if !ok || s.owner != "" || owner == "" {
			return errors.New("bad session owner")
		}
		s.owner = owner
		if k.owned == nil {
			k.owned = map[string]int{}
		}
		k.owned[owner]++
	}
	return nil
}

func readSessions(br *bufio.Reader, k *Keyspace) error {
	n, err := binary.ReadUvarint(br)
	if err != nil {
		return err
	}
	for ; n > 0; n-- {
		id, err := binary.ReadUvarint(br)
		if err != nil {
			return err
		}
		ttl, err := binary.ReadVarint(br)
		if err != nil {
			return err
		}
		name, err := readBytes(br)
		if err != nil {
			return err
		}
		nl, err := binary.ReadUvarint(br)
		if err != nil || nl > 1<<32 {
			return errors.New("bad lock count")
		}
		s := &session{ttl: ttl, name: name}
		for ; nl > 0; nl-- {
			l, err := readBytes(br)
			if err != nil {
				return err
			}
			s.locks = append(s.locks, string(l))
		}
		k.addSession(id, s)
	}
	return nil
}

// Restore replaces the keyspace with the snapshot read from r.
func (k *Keyspace) Restore(r io.Reader) error {
	br := bufio.NewReaderSize(r, 1<<16)
	var magic [4]byte
	if _, err := io.ReadFull(br, magic[:]); err != nil || string(magic[:3]) != "LKS" || magic[3] < 1 || magic[3] > snapVersion {
		return fmt.Errorf("%w: header", ErrBadSnapshot)
	}
	version := magic[3]
	now, err := binary.ReadVarint(br)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadSnapshot, err)
	}
	index, err := binary.ReadUvarint(br)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadSnapshot, err)
	}
	count, err := binary.ReadUvarint(br)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadSnapshot, err)
	}
	fresh := New()
	for i := uint64(0); i < count; i++ {
		it, err := readItem(br, version)
		if err != nil {
			return fmt.Errorf("%w: item %d: %v", ErrBadSnapshot, i, err)
		}
		fresh.items.Set(it)
		fresh.indexItem(it)
	}
	nscripts, err := binary.ReadUvarint(br)
	if err != nil {
		return fmt.Errorf("%w: scripts: %v", ErrBadSnapshot, err)
	}
	for i := uint64(0); i < nscripts; i++ {
		src, err := readBytes(br)
		if err != nil {
			return fmt.Errorf("%w: script %d: %v", ErrBadSnapshot, i, err)
		}
		if _, err := fresh.scripts.Load(src); err != nil {
			return fmt.Errorf("%w: script %d: %v", ErrBadSnapshot, i, err)
		}
	}
	if err := readSessions(br, fresh); err != nil {
		return fmt.Errorf("%w: sessions: %v", ErrBadSnapshot, err)
	}
	if version >= 2 {
		if err := readNamespaces(br, fresh); err != nil {
			return fmt.Errorf("%w: namespaces: %v", ErrBadSnapshot, err)
		}
	}
	if version >= 3 {
		if fresh.acl, err = readUsers(br); err != nil {
			return fmt.Errorf("%w: users: %v", ErrBadSnapshot, err)
		}
	}
	if version >= 4 {
		if err := readSharding(br, fresh); err != nil {
			return fmt.Errorf("%w: sharding: %v", ErrBadSnapshot, err)
		}
	}
	if version >= 5 {
		if err := readOwners(br, fresh); err != nil {
			return fmt.Errorf("%w: owners: %v", ErrBadSnapshot, err)
		}
	}
	if version >= 6 {
		if err := readTombstones(br, fresh); err != nil {
			return fmt.Errorf("%w: tombstones: %v", ErrBadSnapshot, err)
		}
		if err := readPops(br, fresh); err != nil {
			return fmt.Errorf("%w: blocked pops: %v", ErrBadSnapshot, err)
		}
	}
	if version >= 7 {
		if err := readReleased(br, fresh); err != nil {
			return fmt.Errorf("%w: released values: %v", ErrBadSnapshot, err)
		}
		if err := readReplication(br, fresh); err != nil {
			return fmt.Errorf("%w: replication: %v", ErrBadSnapshot, err)
		}
	}
	fresh.now, fresh.index = now, index
	*k = *fresh
	return nil
}

func readItem(br *bufio.Reader, version byte) (*item, error) {
	kind, err := br.ReadByte()
	if err != nil {
		return nil, err
	}
	key, err := readBytes(br)
	if err != nil {
		return nil, err
	}
	var it *item
	var rec *lockRec // KindLock: its item is made once its deadline and token are read
	var wake int64
	switch Kind(kind) {
	case KindString:
		val, err := readBytes(br)
		if err != nil {
			return nil, err
		}
		it = newItem(key, val)
	case KindLock:
		if rec, wake, err = readLock(br, version); err != nil {
			return nil, err
		}
	case KindHash:
		n, err := binary.ReadUvarint(br)
		if err != nil {
			return nil, err
		}
		if n == 0 || n > 1<<32 {
			return nil, errors.New("bad field count")
		}
		var fields []field
		for ; n > 0; n-- {
			name, err := readBytes(br)
			if err != nil {
				return nil, err
			}
			val, err := readBytes(br)
			if err != nil {
				return nil, err
			}
			fields = append(fields, field{name, val})
		}
		it = newItem(key, "")
		it.coll = &collection{fields: fields}
	case KindZSet:
		z, err := readZSet(br) // zset.go
		if err != nil {
			return nil, err
		}
		it = newItem(key, "")
		it.coll = &collection{zset: z}
	case KindList:
		l, err := readList(br) // list.go
		if err != nil {
			return nil, err
		}
		it = newItem(key, "")
		it.coll = &collection{list: l}
	default:
		return nil, fmt.Errorf("unknown kind %d", kind)
	}
	deadline, err := binary.ReadVarint(br)
	if err != nil {
		return nil, err
	}
	token, err := binary.ReadUvarint(br)
	if err != nil {
		return nil, err
	}
	mod, err := binary.ReadUvarint(br)
	if err != nil {
		return nil, err
	}
	if rec != nil {
		it = newLockItem(key, rec, wake, deadline, token)
	}
	it.deadline, it.token, it.mod = deadline, token, mod
	return it, nil
}

func readBytes(br *bufio.Reader) ([]byte, error) {
	n, err := binary.ReadUvarint(br)
	if err != nil {
		return nil, err
	}
	if n > 1<<32 {
		return nil, errors.New("length out of range")
	}
	if n <= 1<<20 {
		b := make([]byte, n)
		_, err = io.ReadFull(br, b)
		return b, err
	}
	// A long value grows as its bytes arrive: a corrupt length prefix must
	// not allocate gigabytes up front (found by FuzzRestore).
	var buf bytes.Buffer
	if _, err := io.CopyN(&buf, br, int64(n)); err != nil {
		return nil, io.ErrUnexpectedEOF
	}
	return buf.Bytes(), nil
}

// readString is readBytes as a string.
func readString(br *bufio.Reader) (string, error) {
	b, err := readBytes(br)
	return string(b), err
}

func readLock(br *bufio.Reader, version byte) (*lockRec, int64, error) {
	rec, wake, err := readLockFields(br, version)
	if err != nil {
		return nil, 0, err
	}
	if len(rec.holders) == 0 && len(rec.waiters) == 0 && rec.delay == 0 {
		return nil, 0, errors.New("empty lock record")
	}
	return rec, wake, nil
}

func readLockFields(br *bufio.Reader, version byte) (rec *lockRec, wake int64, err error) {
	mode, err := br.ReadByte()
	if err != nil {
		return nil, 0, err
	}
	rec = &lockRec{mode: command.LockMode(mode)}
	if rec.limit, err = binary.ReadVarint(br); err != nil {
		return nil, 0, err
	}
	n, err := binary.ReadUvarint(br)
	if err != nil || n > 1<<32 {
		return nil, 0, errors.New("bad holder count")
	}
	for ; n > 0; n-- {
		var h holder
		if h.owner, err = readString(br); err != nil {
			return nil, 0, err
		}
		if h.session, err = binary.ReadUvarint(br); err != nil {
			return nil, 0, err
		}
		if h.token, err = binary.ReadUvarint(br); err != nil {
			return nil, 0, err
		}
		if h.count, err = binary.ReadVarint(br); err != nil {
			return nil, 0, err
		}
		if h.since, err = binary.ReadVarint(br); err != nil {
			return nil, 0, err
		}
		if h.deadline, err = binary.ReadVarint(br); err != nil {
			return nil, 0, err
		}
		if version >= 2 {
			if h.via, err = binary.ReadUvarint(br); err != nil {
				return nil, 0, err
			}
		}
		rec.holders = append(rec.holders, h)
	}
	if version < 2 {
		return rec, 0, nil
	}
	if n, err = binary.ReadUvarint(br); err != nil || n > 1<<32 {
		return nil, 0, errors.New("bad waiter count")
	}
	for ; n > 0; n-- {
		var w waiter
		if w.id, err = binary.ReadUvarint(br); err != nil {
			return nil, 0, err
		}
		if w.owner, err = readString(br); err != nil {
			return nil, 0, err
		}
		if w.session, err = binary.ReadUvarint(br); err != nil {
			return nil, 0, err
		}
		if w.ttl, err = binary.ReadVarint(br); err != nil {
			return nil, 0, err
		}
		m, err := br.ReadByte()
		if err != nil {
			return nil, 0, err
		}
		w.mode = command.LockMode(m)
		if w.limit, err = binary.ReadVarint(br); err != nil {
			return nil, 0, err
		}
		re, err := br.ReadByte()
		if err != nil {
			return nil, 0, err
		}
		w.reentrant = re == 1
		if w.since, err = binary.ReadVarint(br); err != nil {
			return nil, 0, err
		}
		if w.deadline, err = binary.ReadVarint(br); err != nil {
			return nil, 0, err
		}
		rec.waiters = append(rec.waiters, w)
	}
	if rec.delay, err = binary.ReadVarint(br); err != nil {
		return nil, 0, err
	}
	if rec.lockDelay, err = binary.ReadVarint(br); err != nil {
		return nil, 0, err
	}
	if rec.granted, err = binary.ReadUvarint(br); err != nil {
		return nil, 0, err
	}
	if wake, err = binary.ReadVarint(br); err != nil {
		return nil, 0, err
	}
	return rec, wake, nil
}
