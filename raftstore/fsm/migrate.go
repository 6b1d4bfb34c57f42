package fsm

// Moving slots between Raft groups (issue 7), on the state machine's side.
//
// A slot range leaves group g for group h in three entries, all proposed by
// raftstore:
//
//  1. g applies KindMigrate "freeze": the slots are frozen and the reply is the
//     export (Export.Encode) of every live item in them. From then on every
//     entry that names a key of a frozen slot answers TRYAGAIN and changes
//     nothing, and g leaves the slots' items alone: no expiry, no grant, no
//     release by an ending session (see frozenKey). The items are inert until
//     they are dropped or thawed.
//  2. h applies KindImport with that export: h first raises its token base
//     above the export's MaxToken, so that every token, id and version h hands
//     out from then on is above every one g ever did, then inserts the items.
//  3. g applies KindMigrate "drop": the items are deleted, their waiters woken
//     with Wake.Moved, and the slots are gone: entries naming their keys answer
//     MOVED.
//
// "thaw" instead of "drop" ends an aborted move: the slots are g's again.
//
// Everything here is deterministic: items are visited in tree order, sessions
// in id order, and no clock is read (remaining times are log-time differences,
// turned back into deadlines with the importing entry's log time).

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
	"github.com/lockd/lockd/shard"
)

// SlotRange is a run of slots [From, To], inclusive.
type SlotRange struct{ From, To uint16 }

// slotRanges is a set of slots: sorted, disjoint, never adjacent (add merges).
// A value is never changed in place (add and remove return a new slice), so a
// Snapshot may share it.
type slotRanges []SlotRange

func (rs slotRanges) contains(s uint16) bool {
	i := sort.Search(len(rs), func(i int) bool { return rs[i].To >= s })
	return i < len(rs) && rs[i].From <= s
}

// add returns rs with [from, to] added.
func (rs slotRanges) add(from, to uint16) slotRanges {
	out := make(slotRanges, 0, len(rs)+1)
	cur := SlotRange{from, to}
	placed := false
	for _, r := range rs {
		switch {
		case int(r.To)+1 < int(cur.From): // wholly before, not adjacent
			out = append(out, r)
		case int(cur.To)+1 < int(r.From): // wholly after
			if !placed {
				out = append(out, cur)
				placed = true
			}
			out = append(out, r)
		default: // overlapping or adjacent: merge
			cur.From, cur.To = min(cur.From, r.From), max(cur.To, r.To)
		}
	}
	if !placed {
		out = append(out, cur)
	}
	return out
}

// remove returns rs without [from, to].
func (rs slotRanges) remove(from, to uint16) slotRanges {
	var out slotRanges
	for _, r := range rs {
		if r.To < from || r.From > to {
			out = append(out, r)
			continue
		}
		if r.From < from {
			out = append(out, SlotRange{r.From, from - 1})
		}
		if r.To > to {
			out = append(out, SlotRange{to + 1, r.To})
		}
	}
	return out
}

// SlotsMarked reports whether any slot is frozen (leaving) or gone: only then
// does an entry or a read need CheckKeys.
func (k *Keyspace) SlotsMarked() bool { return len(k.frozen) != 0 || len(k.gone) != 0 }

// frozenKey reports whether key's slot is frozen: its item must not change.
func (k *Keyspace) frozenKey(key string) bool {
	return len(k.frozen) != 0 && k.frozen.contains(shard.Slot([]byte(key)))
}

// Logical is the logical index of the last command applied: its entry's Raft
// index plus the token base. Every index the FSM hands out (tokens, waiter and
// session ids, versions) is a logical index, so it is also the highest one
// issued (INFO raft's applied_token).
func (k *Keyspace) Logical() uint64 { return k.index + k.base }

// TokenBase is what this group adds to a Raft index to make the logical index
// that tokens, waiter ids, session ids and WATCH versions are taken from. It is
// replicated state and only ever grows (an import raises it above the
// exporting group's tokens).
func (k *Keyspace) TokenBase() uint64 { return k.base }

// Frozen lists the slot ranges that are frozen (a move under way), in slot
// order. raftstore may use it to resume or abort a move after a restart.
func (k *Keyspace) Frozen() []SlotRange { return append([]SlotRange(nil), k.frozen...) }

// Gone lists the slot ranges that have left this group, in slot order.
func (k *Keyspace) Gone() []SlotRange { return append([]SlotRange(nil), k.gone...) }

// CheckKeys answers for a command that names keys: a TRYAGAIN error and true
// when a key's slot is frozen, a MOVED error (command.MovedError) and true when
// it has left this group; (zero, false) when the command may run. The first
// such key decides. Apply checks every entry this way; raftstore calls it under
// its read lock before serving a read. With no slot frozen or gone it returns
// at once.
func (k *Keyspace) CheckKeys(keys [][]byte) (resp.Value, bool) {
	if !k.SlotsMarked() {
		return resp.Value{}, false
	}
	for _, key := range keys {
		s := shard.Slot(key)
		if k.gone.contains(s) {
			return command.MovedReply(s), true
		}
		if k.frozen.contains(s) {
			return command.MovingReply(s), true
		}
	}
	return resp.Value{}, false
}

// checkEntry is CheckKeys for the keys an entry names (SlotKeys): a command's,
// a script's run for a user, or a transaction's watched and queued keys.
// Entries it cannot parse are left to Apply, which meets them again.
func (k *Keyspace) checkEntry(e command.Entry) (resp.Value, bool) {
	if !k.SlotsMarked() {
		return resp.Value{}, false
	}
	switch e.Kind {
	case command.KindCommand:
		return k.CheckKeys(command.SlotKeys(e.Args))
	case command.KindScriptAs:
		_, args, err := command.ParseScriptAsArgs(e.Args)
		if err != nil {
			return resp.Value{}, false
		}
		return k.CheckKeys(command.SlotKeys(args))
	case command.KindTx:
		tx, err := command.ParseTx(e.Args)
		if err != nil {
			return resp.Value{}, false
		}
		keys := make([][]byte, 0, len(tx.Watch))
		for _, w := range tx.Watch {
			keys = append(keys, w.Key)
		}
		for _, c := range tx.Cmds {
			keys = append(keys, command.SlotKeys(c)...)
		}
		return k.CheckKeys(keys)
	case command.KindReplicated:
		return k.CheckKeys(replicatedKeys(e.Args)) // replica.go
	}
	return resp.Value{}, false
}

// ShardMap returns the stored shard map's encoding (shard.Map.Encode), nil
// when none was stored. The caller owns the copy.
func (k *Keyspace) ShardMap() []byte {
	if k.shardMap == nil {
		return nil
	}
	return append([]byte(nil), k.shardMap...)
}

// applyShardMap is a KindShardMap entry: the map is stored when its version is
// greater than the stored one's (or none is stored); OK either way. A map that
// does not decode is an error reply and changes nothing.
func (k *Keyspace) applyShardMap(args [][]byte) resp.Value {
	b, err := command.ParseShardMapArgs(args)
	if err != nil {
		return resp.Error("ERR bad shard map entry")
	}
	m, err := shard.Decode(b)
	if err != nil {
		return resp.Error("ERR bad shard map: " + err.Error())
	}
	if k.shardMap == nil || m.Version > k.shardVer {
		k.shardMap, k.shardVer = clone(b), m.Version
	}
	return resp.OK
}

// applySessionAttach is a KindSessionAttach entry: session id, opened in
// another group, is opened here with ttl (and its owner, when the entry names
// one) unless it is open already. The reply is the session's TTL here (the
// existing one when it was open).
func (k *Keyspace) applySessionAttach(args [][]byte) resp.Value {
	id, ttl, owner, err := command.ParseSessionAttach(args)
	if err != nil {
		return resp.Error("ERR bad session attach entry")
	}
	if s, ok := k.sessions[id]; ok {
		return resp.Int(s.ttl)
	}
	k.addSession(id, &session{ttl: ttl, owner: owner})
	return resp.Int(ttl)
}

// applyMigrate is a KindMigrate entry. freeze answers the export as a bulk
// string, drop the number of keys it deleted, thaw OK. A malformed entry is an
// error reply and changes nothing.
func (k *Keyspace) applyMigrate(args [][]byte, c Ctx) resp.Value {
	action, from, to, err := command.ParseMigrateArgs(args)
	if err != nil {
		return resp.Error("ERR bad migrate entry")
	}
	switch action {
	case command.MigrateFreeze:
		k.frozen = k.frozen.add(from, to)
		return resp.Bulk(k.export(from, to, c).Encode())
	case command.MigrateDrop:
		n := k.drop(from, to, c)
		k.frozen = k.frozen.remove(from, to)
		k.gone = k.gone.add(from, to)
		return resp.Int(int64(n))
	default: // thaw
		k.frozen = k.frozen.remove(from, to)
		k.thaw(from, to, c)
		return resp.OK
	}
}

// itemsIn returns the items (live or expired) whose keys are in slots
// [from, to], in tree order. It visits every key: a move is rare, a per-slot
// index would cost every write.
func (k *Keyspace) itemsIn(from, to uint16) []*item {
	var out []*item
	k.items.Scan(func(it *item) bool {
		if s := shard.Slot([]byte(it.key())); s >= from && s <= to {
			out = append(out, it)
		}
		return true
	})
	return out
}

// export builds the export of slots [from, to] at the freeze entry c: every
// live item with its remaining TTL; lock records with their live holders
// (a holder whose session has ended here is left out), their lock-delay and no
// waiters; the sessions the holders belong to; and MaxToken, the freeze's
// logical index, which no token this group issued exceeds.
func (k *Keyspace) export(from, to uint16, c Ctx) *Export {
	ex := &Export{From: from, To: to, MaxToken: c.Index}
	var sids []uint64
	for _, it := range k.itemsIn(from, to) {
		if it.deadline != 0 && it.deadline <= c.Now {
			continue
		}
		x := ExportItem{Key: []byte(it.key()), Kind: it.kind(), Token: it.token}
		if it.deadline != 0 && it.kind() != KindLock {
			x.TTL = it.deadline - c.Now
		}
		switch it.kind() {
		case KindString:
			x.Value = []byte(it.val())
		case KindHash:
			for _, f := range it.coll.fields {
				x.Fields = append(x.Fields, HashField{Name: f.name, Value: f.val})
			}
		case KindZSet:
			x.Members = exportZSet(it.coll.zset) // zset.go
		case KindList:
			it.coll.list.tree.Scan(func(n lnode) bool {
				x.Elems = append(x.Elems, n.val)
				return true
			})
		case KindLock:
			rec, _, _ := k.view(it, c.Now)
			l := &ExportLock{Mode: rec.mode, Limit: rec.limit}
			if rec.delay > c.Now {
				l.DelayLeft = rec.delay - c.Now
			}
			for _, h := range rec.holders {
				xh := ExportHolder{Owner: []byte(h.owner), Session: h.session, Token: h.token, Count: h.count, HeldFor: c.Now - h.since}
				if h.session != 0 {
					if _, ok := k.sessions[h.session]; !ok {
						continue
					}
					sids = append(sids, h.session)
				} else {
					xh.TTL = h.deadline - c.Now
				}
				l.Holders = append(l.Holders, xh)
			}
			if len(l.Holders) == 0 && l.DelayLeft == 0 {
				continue // only waiters: they re-queue in the new group
			}
			if len(l.Holders) == 0 { // the mode is the next holder's
				l.Mode, l.Limit = command.LockExclusive, 1
			}
			x.Lock = l
		}
		ex.Items = append(ex.Items, x)
	}
	sort.Slice(sids, func(i, j int) bool { return sids[i] < sids[j] })
	for i, id := range sids {
		if i > 0 && sids[i-1] == id {
			continue
		}
		s := k.sessions[id]
		ex.Sessions = append(ex.Sessions, SessionInfo{ID: id, TTL: s.ttl, Owner: s.owner})
	}
	return ex
}

// drop deletes every item of slots [from, to] and returns how many there were.
// Nothing is published and no lock-delay starts; the names leave their
// sessions' lock lists. A dropped record's waiters are woken: with Moved when
// their wait was still on (the node re-queues them where the slot went), as
// not granted when it had ended.
func (k *Keyspace) drop(from, to uint16, c Ctx) int {
	k.dropPops(from, to) // blocked pops queue again where the slots went (bpop.go)
	doomed := k.itemsIn(from, to)
	for _, it := range doomed {
		k.deleteItem(it)
		k.noteMoved(it) // watch.go
		if it.kind() != KindLock {
			continue
		}
		rec, dropped, _ := k.view(it, c.Now)
		for _, id := range dropped {
			k.wakes = append(k.wakes, Wake{Waiter: id})
		}
		for _, w := range rec.waiters {
			k.wakes = append(k.wakes, Wake{Waiter: w.id, Moved: true})
		}
		for h := range it.holders {
			k.sessionForget(h.session, it.key())
		}
		for _, w := range it.lock.waiters() {
			k.sessionForget(w.session, it.key())
		}
	}
	return len(doomed)
}

// thaw makes slots [from, to] live again after an aborted move. A session that
// ended while they were frozen left its holds on them in place (frozen items
// do not change): they end now, as an expiry (starting the lock-delay), and
// each record is settled, granting waiters the freeze held back.
func (k *Keyspace) thaw(from, to uint16, c Ctx) {
	for _, it := range k.itemsIn(from, to) {
		if it.kind() != KindLock {
			continue
		}
		name := []byte(it.key())
		cur, rec, dropped, changed, errv := k.lockOf(name, c.Now)
		if errv != nil || cur == nil {
			continue
		}
		kept := rec.holders[:0:0]
		for _, h := range rec.holders {
			if _, ok := k.sessions[h.session]; h.session == 0 || ok {
				kept = append(kept, h)
				continue
			}
			changed = true
			k.holdExpired(name, h)
			if rec.lockDelay > 0 {
				rec.delay = max(rec.delay, addSat(c.Now, rec.lockDelay))
			}
		}
		rec.holders = kept
		if changed {
			k.storeLock(name, cur, rec, dropped, c)
		}
	}
}

// applyImport is a KindImport entry (k.index is already its Raft index): the
// token base is raised so that this entry's logical index exceeds the
// export's MaxToken (it is never lowered),
// then every exported item is stored (replacing what the key held), with its
// deadlines this entry's log time plus what remained; sessions the holders
// belong to are opened when they are not, and the imported slots are no longer
// gone. An export that does not decode is an error reply and changes nothing.
func (k *Keyspace) applyImport(args [][]byte, wall int64) resp.Value {
	blob, err := command.ParseImportArgs(args)
	if err != nil {
		return resp.Error("ERR bad import entry")
	}
	ex, err := DecodeExport(blob)
	if err != nil {
		return resp.Error("ERR bad import: " + err.Error())
	}
	if k.Logical() <= ex.MaxToken {
		k.base = ex.MaxToken + 1 - k.index
	}
	c := Ctx{Index: k.Logical(), Now: k.now, Wall: wall, Write: true}
	for _, s := range ex.Sessions {
		if _, ok := k.sessions[s.ID]; !ok {
			k.addSession(s.ID, &session{ttl: s.TTL, owner: s.Owner})
		}
	}
	k.gone = k.gone.remove(ex.From, ex.To)
	for _, x := range ex.Items {
		if s := shard.Slot(x.Key); k.gone.contains(s) {
			k.gone = k.gone.remove(s, s)
		}
		if old, ok := k.items.Get(probe(x.Key)); ok {
			k.remove(old)
		}
		var deadline int64
		if x.TTL > 0 {
			deadline = addSat(c.Now, x.TTL)
		}
		switch x.Kind {
		case KindString:
			k.put(x.Key, x.Value, deadline, x.Token)
		case KindHash:
			fields := make([]field, len(x.Fields))
			for i, f := range x.Fields {
				fields[i] = field{clone(f.Name), clone(f.Value)}
			}
			it := newItem(x.Key, "")
			it.coll, it.deadline, it.token = &collection{fields: fields}, deadline, x.Token
			k.putItem(it)
		case KindZSet:
			if z, ok := importZSet(x.Members); ok { // DecodeExport checked it
				it := newItem(x.Key, "")
				it.coll, it.deadline, it.token = &collection{zset: z}, deadline, x.Token
				k.putItem(it)
			}
		case KindList:
			elems := make([][]byte, len(x.Elems))
			for i, e := range x.Elems {
				elems[i] = clone(e)
			}
			it := newItem(x.Key, "")
			it.coll, it.deadline, it.token = &collection{list: listFrom(elems)}, deadline, x.Token
			k.putItem(it)
		case KindLock:
			rec := lockRec{mode: x.Lock.Mode, limit: x.Lock.Limit, granted: x.Token}
			if x.Lock.DelayLeft > 0 {
				rec.delay = addSat(c.Now, x.Lock.DelayLeft)
			}
			for _, h := range x.Lock.Holders {
				d := int64(sessionBound)
				if h.Session == 0 {
					d = addSat(c.Now, h.TTL)
				}
				rec.holders = append(rec.holders, holder{owner: string(h.Owner), session: h.Session, token: h.Token,
					count: h.Count, since: addSat(c.Now, -h.HeldFor), deadline: d})
				rec.granted = max(rec.granted, h.Token)
				k.sessionHold(h.Session, x.Key)
			}
			k.storeLock(x.Key, nil, rec, nil, c)
		}
	}
	return resp.OK
}

// sessionForget takes name off session id's lock list.
func (k *Keyspace) sessionForget(id uint64, name string) {
	s := k.sessions[id]
	if s == nil {
		return
	}
	for i, n := range s.locks {
		if n == name {
			s.locks = append(s.locks[:i:i], s.locks[i+1:]...)
			delete(s.index, name)
			return
		}
	}
}

// Export is what a freeze hands over: the items of slots [From, To] and the
// sessions their lock holders belong to. Its binary form (Encode) is the reply
// of the freeze entry and the argument of the KindImport entry.
type Export struct {
	From, To uint16
	// MaxToken is the freeze entry's logical index: every token, id and
	// version the exporting group issued is at most this.
	MaxToken uint64
	Items    []ExportItem
	Sessions []SessionInfo // by id
}

// ExportItem is one key of an Export.
type ExportItem struct {
	Key   []byte
	Kind  Kind // KindString, KindHash or KindLock
	Token uint64
	TTL   int64 // ms left; 0 = none (lock records: computed from the holders)
	Value []byte
	// Fields is a hash's fields in order (KindHash).
	Fields []HashField
	// Members is a sorted set's members in order (KindZSet).
	Members []ZMember
	// Elems is a list's elements from the head (KindList).
	Elems [][]byte
	Lock  *ExportLock // KindLock
}

// HashField is one field of an exported hash.
type HashField struct{ Name, Value []byte }

// ExportLock is an exported lock record: no waiters (they re-queue where the
// slot went).
type ExportLock struct {
	Mode      command.LockMode
	Limit     int64
	DelayLeft int64 // ms of lock-delay left; 0 = none
	Holders   []ExportHolder
}

// ExportHolder is one holder of an exported lock.
type ExportHolder struct {
	Owner   []byte
	Session uint64 // 0: a lease
	Token   uint64
	Count   int64 // re-entries
	HeldFor int64 // ms since the grant
	TTL     int64 // ms of lease left; 0 for a session's hold
}

// exportVersion is the version of Export's binary form: 2 adds each
// session's owner. Encode writes 1 when no session has an owner, which a
// group of the version before owners decodes.
const exportVersion = 2

// ErrBadExport is returned by DecodeExport for bytes that are not an export.
var ErrBadExport = errors.New("fsm: bad slot export")

// maxLogical bounds a MaxToken (and every token in an export) so that raising
// the token base can never overflow.
const maxLogical = 1 << 62

// Encode returns the export's binary form: "LKX", a version byte, then the
// range, MaxToken, the sessions and the items, integers as varints and byte
// strings length-prefixed.
func (ex *Export) Encode() []byte {
	version := byte(1)
	for _, s := range ex.Sessions {
		if s.Owner != "" {
			version = exportVersion
		}
	}
	b := []byte{'L', 'K', 'X', version}
	b = binary.AppendUvarint(b, uint64(ex.From))
	b = binary.AppendUvarint(b, uint64(ex.To))
	b = binary.AppendUvarint(b, ex.MaxToken)
	str := func(v []byte) {
		b = binary.AppendUvarint(b, uint64(len(v)))
		b = append(b, v...)
	}
	b = binary.AppendUvarint(b, uint64(len(ex.Sessions)))
	for _, s := range ex.Sessions {
		b = binary.AppendUvarint(b, s.ID)
		b = binary.AppendVarint(b, s.TTL)
		if version >= 2 {
			str([]byte(s.Owner))
		}
	}
	b = binary.AppendUvarint(b, uint64(len(ex.Items)))
	for _, x := range ex.Items {
		b = append(b, byte(x.Kind))
		str(x.Key)
		b = binary.AppendUvarint(b, x.Token)
		b = binary.AppendVarint(b, x.TTL)
		switch x.Kind {
		case KindString:
			str(x.Value)
		case KindHash:
			b = binary.AppendUvarint(b, uint64(len(x.Fields)))
			for _, f := range x.Fields {
				str(f.Name)
				str(f.Value)
			}
		case KindZSet:
			b = binary.AppendUvarint(b, uint64(len(x.Members)))
			for _, m := range x.Members {
				str(m.Name)
				b = binary.AppendUvarint(b, scoreBits(m.Score))
			}
		case KindList:
			b = binary.AppendUvarint(b, uint64(len(x.Elems)))
			for _, e := range x.Elems {
				str(e)
			}
		case KindLock:
			b = append(b, byte(x.Lock.Mode))
			b = binary.AppendVarint(b, x.Lock.Limit)
			b = binary.AppendVarint(b, x.Lock.DelayLeft)
			b = binary.AppendUvarint(b, uint64(len(x.Lock.Holders)))
			for _, h := range x.Lock.Holders {
				str(h.Owner)
				b = binary.AppendUvarint(b, h.Session)
				b = binary.AppendUvarint(b, h.Token)
				b = binary.AppendVarint(b, h.Count)
				b = binary.AppendVarint(b, h.HeldFor)
				b = binary.AppendVarint(b, h.TTL)
			}
		}
	}
	return b
}

// exportReader decodes an export, remembering the first error.
type exportReader struct {
	b   []byte
	err error
}

func (r *exportReader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", ErrBadExport, what)
	}
}

func (r *exportReader) uvarint(what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail(what)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *exportReader) varint(what string) int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail(what)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *exportReader) byte(what string) byte {
	if r.err != nil {
		return 0
	}
	if len(r.b) == 0 {
		r.fail(what)
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

// bytes reads a length-prefixed string (a copy: the export may alias a log
// entry's buffer).
func (r *exportReader) bytes(what string) []byte {
	n := r.uvarint(what)
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.fail(what)
		return nil
	}
	v := append([]byte{}, r.b[:n]...)
	r.b = r.b[n:]
	return v
}

// count reads a element count, each element at least min bytes long: a count
// the remaining bytes cannot hold is an error, never an allocation.
func (r *exportReader) count(what string, min int) int {
	n := r.uvarint(what)
	if r.err == nil && n > uint64(len(r.b)/min) {
		r.fail(what)
	}
	if r.err != nil {
		return 0
	}
	return int(n)
}

// DecodeExport parses Export.Encode's output and checks what an import relies
// on: a valid slot range, MaxToken below 2^62 and no token above it, known
// kinds and lock modes, non-empty hashes, positive TTLs and counts, lock
// records that hold something, and every session holder's session listed.
func DecodeExport(b []byte) (*Export, error) {
	if len(b) < 4 || string(b[:3]) != "LKX" || b[3] < 1 || b[3] > exportVersion {
		return nil, fmt.Errorf("%w: header", ErrBadExport)
	}
	version := b[3]
	r := &exportReader{b: b[4:]}
	ex := &Export{}
	from, to := r.uvarint("range"), r.uvarint("range")
	ex.MaxToken = r.uvarint("max token")
	if r.err == nil && (from > to || to >= shard.Slots) {
		r.fail("range")
	}
	if r.err == nil && ex.MaxToken >= maxLogical {
		r.fail("max token")
	}
	ex.From, ex.To = uint16(from), uint16(to)
	sessions := map[uint64]bool{}
	for n := r.count("sessions", 2); n > 0 && r.err == nil; n-- {
		s := SessionInfo{ID: r.uvarint("session"), TTL: r.varint("session")}
		if version >= 2 {
			s.Owner = string(r.bytes("session owner"))
		}
		if r.err == nil && (s.ID == 0 || s.TTL <= 0 || sessions[s.ID]) {
			r.fail("session")
		}
		sessions[s.ID] = true
		ex.Sessions = append(ex.Sessions, s)
	}
	token := func(t uint64) uint64 {
		if r.err == nil && t > ex.MaxToken {
			r.fail("token above max token")
		}
		return t
	}
	for n := r.count("items", 4); n > 0 && r.err == nil; n-- {
		x := ExportItem{Kind: Kind(r.byte("kind"))}
		x.Key = r.bytes("key")
		x.Token = token(r.uvarint("token"))
		x.TTL = r.varint("ttl")
		if r.err == nil && x.TTL < 0 {
			r.fail("ttl")
		}
		switch x.Kind {
		case KindString:
			x.Value = r.bytes("value")
		case KindHash:
			nf := r.count("fields", 2)
			if r.err == nil && nf == 0 {
				r.fail("empty hash")
			}
			for ; nf > 0 && r.err == nil; nf-- {
				x.Fields = append(x.Fields, HashField{Name: r.bytes("field"), Value: r.bytes("field")})
			}
		case KindZSet:
			nm := r.count("members", 2)
			for ; nm > 0 && r.err == nil; nm-- {
				x.Members = append(x.Members, ZMember{Name: r.bytes("member"), Score: scoreOfBits(r.uvarint("score"))})
			}
			if _, ok := importZSet(x.Members); r.err == nil && !ok {
				r.fail("sorted set")
			}
		case KindList:
			ne := r.count("elements", 1)
			if r.err == nil && ne == 0 {
				r.fail("empty list")
			}
			for ; ne > 0 && r.err == nil; ne-- {
				x.Elems = append(x.Elems, r.bytes("element"))
			}
		case KindLock:
			l := &ExportLock{Mode: command.LockMode(r.byte("mode"))}
			l.Limit = r.varint("limit")
			l.DelayLeft = r.varint("lock-delay")
			if r.err == nil && (l.Mode < command.LockExclusive || l.Mode > command.LockSemaphore || l.Limit < 0 || l.DelayLeft < 0) {
				r.fail("lock record")
			}
			for nh := r.count("holders", 6); nh > 0 && r.err == nil; nh-- {
				h := ExportHolder{Owner: r.bytes("owner"), Session: r.uvarint("holder"), Token: token(r.uvarint("holder")),
					Count: r.varint("holder"), HeldFor: r.varint("holder"), TTL: r.varint("holder")}
				bad := h.Count < 1 || h.HeldFor < 0 || (h.Session == 0) != (h.TTL > 0) || h.TTL < 0 ||
					(h.Session != 0 && !sessions[h.Session])
				if r.err == nil && bad {
					r.fail("holder")
				}
				l.Holders = append(l.Holders, h)
			}
			if r.err == nil && len(l.Holders) == 0 && l.DelayLeft == 0 {
				r.fail("empty lock record")
			}
			if r.err == nil && x.TTL != 0 {
				r.fail("lock ttl")
			}
			x.Lock = l
		default:
			r.fail("kind")
		}
		ex.Items = append(ex.Items, x)
	}
	if r.err == nil && len(r.b) != 0 {
		r.fail("trailing bytes")
	}
	if r.err != nil {
		return nil, r.err
	}
	return ex, nil
}
