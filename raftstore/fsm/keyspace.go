// Package fsm is lockd's replicated state machine: an in-memory keyspace that
// applies committed log entries. It is pure: no I/O, no clock, no randomness and no
// dependence on map order, so every replica that applies the same entries reaches
// the same state and returns the same replies. Time is the log time carried by the
// entries; tokens are the logical indexes (Raft index + TokenBase) of the entries
// that wrote the values. The token base is 0 until the group imports a slot range
// from another group (migrate.go).
//
// A Keyspace is not safe for concurrent use; raftstore serialises Apply and guards
// reads with a read lock.
package fsm

import (
	"fmt"
	"math"
	"strings"
	"unsafe"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/lua"
	"github.com/lockd/lockd/resp"
	"github.com/tidwall/btree"
	"github.com/zeebo/xxh3"
)

// Kind is the type of value a key holds.
type Kind uint8

// Value kinds. Part of the snapshot format: never renumber.
const (
	KindString Kind = 1
	KindHash   Kind = 2
)

// field is one field of a hash. Fields keep insertion order, which is the order
// Redis 7 replies with for the small hashes lock clients use.
type field struct {
	name, val []byte
}

// collection is the payload of a key that holds a collection: exactly one
// member is set, and it is never empty (a collection emptied by a command is
// deleted, as in Redis). One pointer in item serves every collection kind,
// which keeps item at 64 bytes (TestItemSize). Like items, a collection in the
// trees is never changed in place: a write builds a new one (or a
// copy-on-write clone) and puts a new item.
type collection struct {
	fields []field // KindHash, in insertion order
	zset   *zset   // KindZSet (zset.go)
	list   *list   // KindList (list.go)
}

// kind is the kind of value c holds.
func (c *collection) kind() Kind {
	if c.zset != nil {
		return KindZSet
	}
	if c.list != nil {
		return KindList
	}
	return KindHash
}

// item is one key. An item whose deadline has passed is absent for every command,
// even before a tick entry removes it.
//
// Its kind is told by which payload is set: lock (KindLock; val then holds
// the record's first holder's owner), coll (a collection: KindHash …), else val
// (KindString). The key and the value share one string (one malloc and one
// size-class round-up per key instead of two); the layout is kept to 64
// bytes (a malloc size class): there is one item per key.
type item struct {
	hash     uint32      // scan order; stable across replicas and restarts
	klen     uint32      // kv[:klen] is the key
	kv       string      // the key, then the value (KindString) or the first holder's owner (KindLock)
	lock     *lockData   // KindLock
	coll     *collection // KindHash (and every other collection kind); nil otherwise
	deadline int64       // log time in ms; 0 = no TTL
	token    uint64      // logical index of the entry that wrote the value
	mod      uint64      // logical index of the entry that last changed the item (WATCH)
}

// key is the item's key.
func (it *item) key() string { return it.kv[:it.klen] }

// val is a string's value, or a lock record's first holder's owner; "" for a
// hash.
func (it *item) val() string { return it.kv[it.klen:] }

// newItem returns an item for key whose val is val (a string's value, a
// lock's first owner; "" for a hash or a lookup probe): key and val in one
// new string. val is a []byte from a command or a string already held; each
// is copied once, into memory that is not cleared first (a strings.Builder
// grown to the size): a concatenation converting a []byte type parameter
// copied a megabyte value twice.
func newItem[V string | []byte](key []byte, val V) *item {
	var b strings.Builder
	b.Grow(len(key) + len(val))
	b.Write(key)
	switch v := any(val).(type) {
	case string:
		b.WriteString(v)
	case []byte:
		b.Write(v)
	}
	return &item{hash: hashKey(key), kv: b.String(), klen: uint32(len(key))}
}

// newLockItem returns an item for key holding rec packed (packLock), with
// the wake time wake, the deadline deadline and the token token.
func newLockItem(key []byte, rec *lockRec, wake, deadline int64, token uint64) *item {
	d, owner := packLock(rec, wake, deadline, token)
	it := newItem(key, owner)
	it.lock, it.deadline, it.token = d, deadline, token
	return it
}

// probe is an item to look key up by in the items tree.
// Its kv aliases key instead of copying it (a lookup allocates no copy of
// its key): a probe lives only for its lookup, and key does not change
// meanwhile.
func probe(key []byte) *item {
	return &item{hash: hashKey(key), kv: unsafe.String(unsafe.SliceData(key), len(key)), klen: uint32(len(key))}
}

// expires reports whether it has a TTL of its own: a deadline, and not a
// session's lock (sessionBound), which lives as long as its session. Only
// such items are in the deadlines tree.
func (it *item) expires() bool { return it.deadline != 0 && it.deadline != sessionBound }

// kind is the kind of value it holds.
func (it *item) kind() Kind {
	switch {
	case it.lock != nil:
		return KindLock
	case it.coll != nil:
		return it.coll.kind()
	}
	return KindString
}

func byHash(a, b *item) bool {
	if a.hash != b.hash {
		return a.hash < b.hash
	}
	return a.key() < b.key()
}

// byWake orders lockTimers, which holds only lock items with waiters.
func byWake(a, b *item) bool {
	if wa, wb := a.lock.wake(), b.lock.wake(); wa != wb {
		return wa < wb
	}
	return a.key() < b.key()
}

func byDeadline(a, b *item) bool {
	if a.deadline != b.deadline {
		return a.deadline < b.deadline
	}
	return a.key() < b.key()
}

// Keyspace is the FSM state of one Raft group.
type Keyspace struct {
	items         *btree.BTreeG[*item] // every key, ordered by (hash, key)
	deadlines     *btree.BTreeG[*item] // keys with a TTL, ordered by (deadline, key)
	lockTimers    *btree.BTreeG[*item] // lock records with a wake time, ordered by (wake, key)
	now           int64                // log time of the last applied entry
	index         uint64               // Raft index of the last applied entry
	base          uint64               // token base: logical index = Raft index + base (migrate.go)
	frozen        slotRanges           // slots leaving this group: their keys answer TRYAGAIN
	gone          slotRanges           // slots that left this group: their keys answer MOVED
	shardMap      []byte               // the newest shard.Map stored (KindShardMap), encoded; nil none
	shardVer      uint64               // shardMap's version
	events        []Event              // messages published by the entry being applied
	touched       []string             // keys the command being applied changed, while tracked (events.go)
	scripts       *lua.Engine          // the replicated script cache (EVAL, SCRIPT LOAD)
	budget        int64                // scripts' instruction budget; 0 = ApplyBudget
	inScript      bool                 // a script is running (its PUBLISHes are not Direct)
	cancel        <-chan struct{}      // dry runs only: closed by SCRIPT KILL
	maxAlloc      int64                // dry runs only: lua.Limits.MaxAllocBytes
	maxWrite      int                  // dry runs only: the largest write command a script may send (0: no limit)
	tooLarge      resp.Value           // dry runs only: the refusal of the first write over maxWrite
	sessions      map[uint64]*session  // open sessions by id (lookups only: never iterated unsorted)
	namespaces    []Namespace          // by prefix
	acl           *command.ACLTable    // ACL users (acl.go); nil = none defined
	settings      command.Settings     // KindSettings: owners on, the per-user session cap (session.go)
	tombs         *tombstones          // FeatureWatchDeletes: deleted keys' indexes (watch.go); nil before
	owned         map[string]int       // open sessions per owner; derived from sessions (never in a snapshot)
	wakes         []Wake               // what became of waiters, since the last TakeWakes
	pops          *popQueues           // blocked pops (bpop.go); nil until the first
	repl          replication          // the Redis master followed (replica.go)
	wants         func(string) bool    // SetEventFilter; nil: every event channel
	stats         LockStats            // metrics only (see LockStats)
	expiredRecent map[uint64]string    // metrics only: tokens whose lease ran out lately -> name
	expiredOrder  []uint64             // expiredRecent's keys, oldest first
	restored      restoreBudget        // RESTORE's decoded bytes in the entry being applied (dump.go)
}

// Event is a message published by an applied entry (PUBLISH, at top level, in a
// transaction or in a script). The node delivers it to its own subscribers.
type Event struct {
	Channel, Message []byte
	// Direct is set for a PUBLISH command of the entry or of its transaction,
	// whose reply the proposing node fills with its own receiver count; a
	// PUBLISH from a script answers the script 0 (scripts stay deterministic).
	Direct bool
}

// TakeEvents returns and forgets the events of the entries applied since the last
// call. Call it from the apply goroutine.
func (k *Keyspace) TakeEvents() []Event {
	k.flushTouched() // events.go
	ev := k.events
	k.events = nil
	return ev
}

// New returns an empty keyspace.
func New() *Keyspace {
	return &Keyspace{
		items:      btree.NewBTreeGOptions(byHash, btree.Options{NoLocks: true}),
		deadlines:  btree.NewBTreeGOptions(byDeadline, btree.Options{NoLocks: true}),
		lockTimers: btree.NewBTreeGOptions(byWake, btree.Options{NoLocks: true}),
		scripts:    lua.New(),
	}
}

// Now is the log time of the last applied entry.
func (k *Keyspace) Now() int64 { return k.now }

// Index is the Raft index of the last applied entry (not the logical index
// tokens are taken from: see TokenBase).
func (k *Keyspace) Index() uint64 { return k.index }

// NextDeadline returns the earliest log time at which a tick entry has work: a
// TTL deadline, or a lock record's wake time (a lease ending while someone
// waits, a lock-delay running out, a grant waiting for its own entry). Items
// of frozen slots have none: a tick leaves them alone.
func (k *Keyspace) NextDeadline() (int64, bool) {
	d, ok := int64(0), false
	if it, found := k.firstUnfrozen(k.deadlines); found {
		d, ok = it.deadline, true
	}
	if it, found := k.firstUnfrozen(k.lockTimers); found && (!ok || it.lock.wake() < d) {
		d, ok = it.lock.wake(), true
	}
	if pd, found := k.nextPopDeadline(); found && (!ok || pd < d) {
		d, ok = pd, true // a blocked pop's timeout (bpop.go)
	}
	return d, ok
}

// firstUnfrozen is the first item of tree whose slot is not frozen.
func (k *Keyspace) firstUnfrozen(tree *btree.BTreeG[*item]) (*item, bool) {
	if len(k.frozen) == 0 {
		return tree.Min()
	}
	var first *item
	tree.Scan(func(it *item) bool {
		if k.frozenKey(it.key()) {
			return true
		}
		first = it
		return false
	})
	return first, first != nil
}

// GrantReady reports whether a waiter can be granted right now (a grant that
// had to wait for an entry of its own): the leader proposes the next tick
// without pausing.
func (k *Keyspace) GrantReady() bool {
	it, ok := k.firstUnfrozen(k.lockTimers)
	return ok && it.lock.wake() <= k.now
}

// hashKey is the scan order of a key. Cursors are hash values, so the top bit is
// cleared and 0 is avoided: cursor 0 means "start" and "done".
func hashKey(key []byte) uint32 {
	h := uint32(xxh3.Hash(key) >> 32)
	if h == 0 {
		h = 1
	}
	return h
}

// Ctx is the context of one command: where it runs in the log and what time it is.
type Ctx struct {
	Index uint64 // the entry's logical index, Raft index + TokenBase (0 for reads)
	Now   int64  // log time, ms
	Wall  int64  // the stamping leader's wall clock, Unix ms
	Write bool   // false for a read served outside the log: nothing may change
	Top   bool   // a command entry of its own (not in a transaction or script): it may block
	User  string // a script runs for this user: what it calls is checked against the user's ACL ("" = no check)
	// Replicated: a command a Redis master sent (KindReplicated), which a
	// group that follows the master runs where it refuses clients' writes.
	Replicated bool
}

// ApplyEach executes one committed log entry at Raft index index, as Apply
// does, and calls each with every command entry it stood for and that
// command's reply, in log order, right after the command ran (so that each
// may take the command's events and wakes): e itself, or for a batch entry
// (command.KindBatch) each of its commands. Every command of a batch has a
// logical index of its own (tokens, waiter and session ids, WATCH versions),
// the first the entry's, each next one more: the token base (TokenBase) grows
// by one before each command after the first, on every replica alike. It
// returns command.ErrCorrupt, having applied nothing, for a batch entry whose
// arguments do not parse. It is deterministic.
func (k *Keyspace) ApplyEach(index uint64, e command.Entry, each func(cmd command.Entry, reply resp.Value)) error {
	if e.Kind != command.KindBatch {
		each(e, k.Apply(index, e))
		return nil
	}
	cmds, err := command.ParseBatch(e.Args)
	if err != nil {
		return err
	}
	for j, args := range cmds {
		if j > 0 {
			k.base++
		}
		cmd := command.Entry{Kind: command.KindCommand, Time: e.Time, Wall: e.Wall, Args: args}
		each(cmd, k.Apply(index, cmd))
	}
	return nil
}

// Apply executes one committed log entry at Raft index index. It is deterministic.
// An entry that names a key of a frozen or departed slot answers as CheckKeys
// does and changes nothing (beyond log time and the applied index). A batch
// entry (command.KindBatch) is applied as ApplyEach applies it, its replies
// in one array (a corrupt one panics, as any undecodable entry).
func (k *Keyspace) Apply(index uint64, e command.Entry) resp.Value {
	if e.Kind == command.KindBatch {
		var out []resp.Value
		if err := k.ApplyEach(index, e, func(_ command.Entry, v resp.Value) { out = append(out, v) }); err != nil {
			panic(fmt.Sprintf("fsm: log index %d: %v", index, err))
		}
		return resp.Array(out...)
	}
	if e.Time > k.now {
		k.now = e.Time
	}
	k.index = index
	if v, stop := k.checkEntry(e); stop {
		return v
	}
	c := Ctx{Index: k.Logical(), Now: k.now, Wall: e.Wall, Write: true}
	v := k.applyEntry(index, e, c)
	k.serveReady(c) // blocked pops, once the entry's command, transaction or script ran (bpop.go)
	return v
}

// applyEntry is Apply's part for one entry of kind e.Kind (not a batch), at
// c; Apply serves blocked pops after it.
func (k *Keyspace) applyEntry(index uint64, e command.Entry, c Ctx) resp.Value {
	switch e.Kind {
	case command.KindTick:
		k.expireDue()
		k.settleDue(c)
		k.expirePops(c) // bpop.go
		return resp.OK
	case command.KindNoop:
		return resp.OK
	case command.KindSettings:
		return k.applySettings(e.Args)
	case command.KindSessionAttach:
		return k.applySessionAttach(e.Args)
	case command.KindMigrate:
		return k.applyMigrate(e.Args, c)
	case command.KindImport:
		return k.applyImport(e.Args, e.Wall)
	case command.KindShardMap:
		return k.applyShardMap(e.Args)
	case command.KindReplication:
		return k.applyReplication(e.Args, c) // replica.go
	case command.KindReplicated:
		return k.applyReplicated(e.Args, c)
	case command.KindScript:
		op, err := command.ParseScriptArgs(e.Args)
		if err != nil {
			panic(fmt.Sprintf("fsm: log index %d: %v", index, err))
		}
		switch op := op.(type) {
		case command.ScriptLoad:
			sha, err := k.scripts.Load(op.Source)
			if err != nil {
				return resp.Error(err.Error())
			}
			return resp.BulkString(sha)
		default:
			k.scripts.Flush()
			return resp.OK
		}
	case command.KindSessionExpire:
		id, err := command.ParseSessionExpireArgs(e.Args)
		if err != nil {
			panic(fmt.Sprintf("fsm: log index %d: %v", index, err))
		}
		k.endSession(id, true, c)
		return resp.OK
	case command.KindTx:
		tx, err := command.ParseTx(e.Args)
		if err != nil {
			panic(fmt.Sprintf("fsm: log index %d: %v", index, err))
		}
		return k.execTx(tx, c)
	}
	// A command entry; a KindScriptAs entry is one too, run for its user.
	args, user := e.Args, ""
	if e.Kind == command.KindScriptAs {
		var err error
		if user, args, err = command.ParseScriptAsArgs(e.Args); err != nil {
			panic(fmt.Sprintf("fsm: log index %d: %v", index, err))
		}
	}
	op, spec, err := command.Parse(args)
	if err != nil {
		return errReply(err)
	}
	if spec == nil {
		return resp.Error(fmt.Sprintf("ERR unknown command '%s'", args[0]))
	}
	if v, refused := k.refuseWrite(spec, c); refused { // replica.go
		return v
	}
	c.Top, c.User = true, user
	return k.Exec(op, c)
}

// execTx applies a MULTI/EXEC transaction: nothing if a watched key changed (a
// nil reply), else every command in order, each failure an element of the reply.
func (k *Keyspace) execTx(tx command.Tx, c Ctx) resp.Value {
	if v, refused := k.refuseTx(tx, c); refused { // replica.go
		return v
	}
	for _, w := range tx.Watch {
		if k.version(w.Key, c.Now) != w.Version {
			return resp.NilArray
		}
	}
	out := make([]resp.Value, len(tx.Cmds))
	for i, args := range tx.Cmds {
		op, spec, err := command.Parse(args)
		switch {
		case err != nil:
			out[i] = errReply(err)
		case spec == nil:
			out[i] = resp.Error(fmt.Sprintf("ERR unknown command '%s'", args[0]))
		default:
			out[i] = k.Exec(op, c)
		}
	}
	return resp.Array(out...)
}

// version is what WATCH compares: the index of the entry that last changed the
// key; when it is absent, what absentVersionOf says (watch.go).
func (k *Keyspace) version(key []byte, now int64) uint64 {
	if it := k.lookup(key, now); it != nil {
		return it.mod
	}
	return k.absentVersionOf(key)
}

// Read executes a read-only op at log time now (which must not be earlier than
// Now()). It changes nothing.
func (k *Keyspace) Read(op command.Op, now, wall int64) resp.Value {
	return k.ReadAs(op, "", now, wall)
}

// ReadAs is Read on behalf of user: a read-only script's commands are checked
// against the user's ACL ("" = no check).
func (k *Keyspace) ReadAs(op command.Op, user string, now, wall int64) resp.Value {
	if now < k.now {
		now = k.now
	}
	return k.Exec(op, Ctx{Now: now, Wall: wall, User: user})
}

func errReply(err error) resp.Value {
	if _, ok := err.(command.Replier); ok {
		return command.ErrorReply(err)
	}
	return resp.Error("ERR " + err.Error())
}

// lookup returns the live item for key, or nil.
func (k *Keyspace) lookup(key []byte, now int64) *item {
	it, ok := k.items.Get(probe(key))
	if !ok || !it.live(now) {
		return nil
	}
	return it
}

// remove deletes it from both indexes.
// Waiters of a removed lock are told they will not be granted.
func (k *Keyspace) remove(it *item) {
	k.deleteItem(it)
	k.dropWaiters(it)
}

// deleteItem deletes it from every index, telling no waiter. A key present
// until now leaves a tombstone (watch.go).
func (k *Keyspace) deleteItem(it *item) {
	k.items.Delete(it)
	k.unindexItem(it)
	k.touch(it.key()) // events.go
	k.noteDeleted(it) // watch.go
}

// waits reports whether it is a lock record with waiters: one that has a wake
// time and is in lockTimers.
func (it *item) waits() bool { return it.kind() == KindLock && it.lock.numWaiters() > 0 }

// indexItem adds it to the deadline and wake indexes it belongs to; unindexItem removes
// it from them.
func (k *Keyspace) indexItem(it *item) {
	k.account(it, 1)
	if it.expires() {
		k.deadlines.Set(it)
	}
	if it.waits() {
		k.lockTimers.Set(it)
	}
}

func (k *Keyspace) unindexItem(it *item) {
	k.account(it, -1)
	if it.expires() {
		k.deadlines.Delete(it)
	}
	if it.waits() {
		k.lockTimers.Delete(it)
	}
}

// setDeadline changes it's TTL. Items in the trees are never mutated (a snapshot
// may be reading them), so the item is replaced by a copy with the new deadline.
func (k *Keyspace) setDeadline(it *item, d int64) {
	if it.deadline == d {
		return
	}
	k.unindexItem(it)
	cp := it.detached() // a lock's holder keeps its own lease
	cp.deadline = d
	cp.mod = k.Logical()
	k.items.Set(cp)
	k.indexItem(cp)
	k.touch(cp.key())
}

// put stores a string value under key, replacing any earlier item (live or not).
func (k *Keyspace) put(key, val []byte, deadline int64, token uint64) *item {
	it := newItem(key, val)
	it.token, it.mod, it.deadline = token, k.Logical(), deadline
	if old, ok := k.items.Set(it); ok {
		k.unindexItem(old)
		k.dropWaiters(old)
	}
	k.indexItem(it)
	k.touch(it.key())
	return it
}

// putItem stores it (a new item, never one already in the trees), replacing any
// earlier item under its key and keeping the deadline index right.
func (k *Keyspace) putItem(it *item) {
	it.mod = k.Logical()
	if old, ok := k.items.Set(it); ok {
		k.unindexItem(old)
		if old.deadline != 0 && old.deadline <= k.now {
			k.dropWaiters(old) // an expired record replaced: its waiters' waits ended
		}
	}
	k.indexItem(it)
	k.touch(it.key())
	if k.pops != nil && it.coll != nil {
		k.signalReady([]byte(it.key())) // a list or sorted set: blocked pops may be served (bpop.go)
	}
}

// MaxExpirePerTick bounds the keys one tick entry removes, so that a backlog of
// expiries (many leases due together, or due just after a failover) is spread
// over several entries instead of stalling the apply loop in one. Keys past
// their deadline are absent for every command meanwhile, so the bound changes
// only when their memory is freed.
const MaxExpirePerTick = 1000

// expireDue removes up to MaxExpirePerTick items whose deadline has passed,
// earliest first, leaving those of frozen slots alone.
func (k *Keyspace) expireDue() {
	var due []*item
	k.deadlines.Scan(func(it *item) bool {
		if it.deadline > k.now || len(due) >= MaxExpirePerTick {
			return false
		}
		if !k.frozenKey(it.key()) {
			due = append(due, it)
		}
		return true
	})
	for _, it := range due {
		if it.kind() == KindLock {
			for h := range it.holders {
				k.holdExpired([]byte(it.key()), h)
			}
		}
		k.publishExpired(it.key())
		k.remove(it)
	}
}

// Counts returns the number of live keys and of live keys with a TTL at now.
func (k *Keyspace) Counts(now int64) (keys, expires int) {
	dead := 0
	k.deadlines.Scan(func(it *item) bool {
		if it.deadline > now {
			return false
		}
		dead++
		return true
	})
	return k.items.Len() - dead, k.deadlines.Len() - dead
}

// liveCount is the number of keys that have not expired at now.
func (k *Keyspace) liveCount(now int64) int {
	n, _ := k.Counts(now)
	return n
}

func clone(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return append([]byte(nil), b...)
}

// addSat adds without overflow, saturating at the int64 range.
func addSat(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	if b < 0 && a < math.MinInt64-b {
		return math.MinInt64
	}
	return a + b
}

// absToLog turns a client's absolute Unix time in ms into log time.
func absToLog(c Ctx, unixMs int64) int64 { return addSat(c.Now, addSat(unixMs, -c.Wall)) }

// logToAbs turns a log-time deadline into a Unix time in ms.
func logToAbs(c Ctx, d int64) int64 { return addSat(c.Wall, d-c.Now) }
