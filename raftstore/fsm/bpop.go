package fsm

import (
	"bufio"
	"encoding/binary"
	"errors"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
	"github.com/lockd/lockd/shard"
	"github.com/tidwall/btree"
)

// Blocked pops (BLPOP, BRPOP, BLMPOP, BLMOVE, BRPOPLPUSH, BZPOPMIN, BZPOPMAX).
//
// A blocking pop that finds all its keys empty, as a command entry of its
// own, becomes a waiter: a replicated record whose id is the entry's logical
// index (so ids grow in log order, and a key's waiters in id order are its
// FIFO queue, across every node). Its entry answers QUEUED (queuedReply), as
// a queued LOCK.ACQUIRE does; the node that proposed it holds the client.
//
// When an entry creates a list or a sorted set under a key that waiters wait
// on (a push, LMOVE, a served BLMOVE's push, ZADD …: putItem signals it), the
// key is ready; after the entry's command — or its whole transaction or
// script — ran, serveReady serves the ready keys as Redis 7.0's
// handleClientsBlockedOnKeys does: each key's waiters of its type in FIFO
// order, each popping for itself in this same entry on every replica, until
// the key is empty; a served BLMOVE whose destination holds another type is
// answered WRONGTYPE and leaves. Keys a served BLMOVE creates are served in
// the same loop. The pushing command's reply was computed before (LPUSH
// counts what it pushed), as in Redis.
//
// A served waiter's reply travels in its Wake (Wake.Pop, Wake.Reply): every
// node applies the entry, so the node that holds the client hands it the
// reply from its own apply, with no polling and nothing kept in the state
// machine. A waiter also leaves by its deadline (its timeout in log time; a
// tick drops it, Wake.Reply a null array, as Redis answers a timeout), by
// POP.CANCEL (its node's own timer ran out first, its client went away, or
// its entry's outcome was unknown), or by a slot move (Wake.Moved: the node
// queues it again where the slot went). A waiter stays while its key is
// deleted or holds another type, as in Redis 7.0. Waiters are in snapshots
// (version 6) and never in slot exports.
//
// The node sends its clients' pops as POP.WAIT tag … (command.BlockingPop.Tag,
// unique in the cluster) and finds them by tag: every outcome of a tagged
// pop, an answer at once included, is also a wake for its tag, and so is
// every POP.CANCEL's (Wake.Cancel, 1 withdrawn or 0 not waiting), after the
// wake of any earlier entry that answered the pop. A node whose pop's entry
// had an unknown outcome (its leader died) cancels by tag and reads its own
// apply: an answer before the cancel's wake is the pop's; none means nothing
// was popped, and the pop can be sent again. So no element is popped for a
// live client that never hears of it. A tagged waiter also has a lease
// (PopLease) that its node renews (POP.RENEW) while the client waits: a
// waiter whose node died lapses instead of waiting for ever.
type popWaiter struct {
	id       uint64
	op       command.BlockingPop // its keys, destination and tag are its own copies
	deadline int64               // log time its wait ends; 0: never
	// lease is the log time by which the node holding a tagged waiter's
	// client must renew it (POP.RENEW), else it lapses: a waiter whose node
	// died does not outlive it by more than PopLease. 0 for an untagged one.
	lease int64
}

// PopLease is how long a tagged waiter lives without its node's renewal
// (POP.RENEW, sent every PopLease/3 while its client waits), in log time.
// A variable only so that tests can shorten it.
var PopLease int64 = 15_000

// expiry is when w leaves unless something happens first: the earlier of its
// deadline and its lease (0: never).
func (w *popWaiter) expiry() int64 {
	switch {
	case w.deadline == 0:
		return w.lease
	case w.lease == 0:
		return w.deadline
	}
	return min(w.deadline, w.lease)
}

// wake is the wake that answers w with v (nil: moved). A lapsed lease is
// told by a null array with Lapsed set: the node, if it still holds the
// client, queues the pop again.
func (w *popWaiter) wake(v *resp.Value) Wake {
	return Wake{Waiter: w.id, Pop: true, Tag: string(w.op.Tag), Reply: v, Moved: v == nil}
}

// popKey is one key a waiter waits on: popQueues.byKey orders them by
// (key, id), which lists each key's waiters in FIFO order.
type popKey struct {
	key string
	w   *popWaiter
}

// popQueues holds every waiter of the keyspace, and the keys signalled ready
// by the entry being applied. Its trees hold immutable waiters.
type popQueues struct {
	byID     *btree.BTreeG[*popWaiter] // by id
	byKey    *btree.BTreeG[popKey]     // by (key, id)
	byTime   *btree.BTreeG[*popWaiter] // waiters with an expiry, by (expiry, id)
	byTag    map[string]*popWaiter     // tagged waiters by tag (lookups only, never iterated)
	ready    []string                  // keys signalled by the entry being applied, in order
	readySet map[string]bool
}

func newPopQueues() *popQueues {
	return &popQueues{
		byID: btree.NewBTreeGOptions(func(a, b *popWaiter) bool { return a.id < b.id }, btree.Options{NoLocks: true}),
		byKey: btree.NewBTreeGOptions(func(a, b popKey) bool {
			if a.key != b.key {
				return a.key < b.key
			}
			return a.w.id < b.w.id
		}, btree.Options{NoLocks: true}),
		byTime: btree.NewBTreeGOptions(func(a, b *popWaiter) bool {
			if ea, eb := a.expiry(), b.expiry(); ea != eb {
				return ea < eb
			}
			return a.id < b.id
		}, btree.Options{NoLocks: true}),
		readySet: map[string]bool{},
		byTag:    map[string]*popWaiter{},
	}
}

// waiterKeys are the keys w waits on, each once.
func (w *popWaiter) waiterKeys() []string {
	var out []string
	for _, k := range w.op.Keys {
		dup := false
		for _, o := range out {
			if o == string(k) {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, string(k))
		}
	}
	return out
}

func (k *Keyspace) addPop(w *popWaiter) {
	if k.pops == nil {
		k.pops = newPopQueues()
	}
	q := k.pops
	q.byID.Set(w)
	if w.op.Tag != nil {
		q.byTag[string(w.op.Tag)] = w
	}
	for _, key := range w.waiterKeys() {
		q.byKey.Set(popKey{key: key, w: w})
	}
	if w.expiry() != 0 {
		q.byTime.Set(w)
	}
}

func (k *Keyspace) removePop(w *popWaiter) {
	q := k.pops
	q.byID.Delete(w)
	if w.op.Tag != nil {
		delete(q.byTag, string(w.op.Tag))
	}
	for _, key := range w.waiterKeys() {
		q.byKey.Delete(popKey{key: key, w: w})
	}
	if w.expiry() != 0 {
		q.byTime.Delete(w)
	}
}

// nextOn returns key's first waiter in FIFO order whose id is from or more
// (nil: none), reading only that one from the tree.
func (q *popQueues) nextOn(key string, from uint64) *popWaiter {
	var w *popWaiter
	q.byKey.Ascend(popKey{key: key, w: &popWaiter{id: from}}, func(p popKey) bool {
		if p.key == key {
			w = p.w
		}
		return false
	})
	return w
}

// PopWaiters is the number of blocked pops waiting.
func (k *Keyspace) PopWaiters() int {
	if k.pops == nil {
		return 0
	}
	return k.pops.byID.Len()
}

// signalReady notes that key now holds a list or sorted set: when waiters
// wait on it, serveReady serves them once the entry's command has run.
func (k *Keyspace) signalReady(key []byte) {
	q := k.pops
	if q == nil || q.byID.Len() == 0 || q.readySet[string(key)] {
		return
	}
	if q.nextOn(string(key), 0) == nil {
		return
	}
	q.readySet[string(key)] = true
	q.ready = append(q.ready, string(key))
}

// serveReady serves the waiters of the keys signalled ready (see popWaiter).
func (k *Keyspace) serveReady(c Ctx) {
	q := k.pops
	if q == nil || k.repl.master != "" {
		// While the group follows a Redis master (replica.go), blocked pops
		// wait: an element the master's stream brings is not theirs to take.
		// They are served once REPLICAOF NO ONE applies (or time out).
		return
	}
	for len(q.ready) > 0 {
		batch := q.ready
		q.ready = nil
		for _, key := range batch {
			delete(q.readySet, key)
			k.serveKey([]byte(key), c)
		}
	}
}

// serveKey serves key's waiters in FIFO order while it holds elements. It
// steps through the queue one waiter at a time, so a push that serves one of
// many waiters reads only the ones it passes.
func (k *Keyspace) serveKey(key []byte, c Ctx) {
	for w := k.pops.nextOn(string(key), 0); w != nil; w = k.pops.nextOn(string(key), w.id+1) {
		it := k.lookup(key, c.Now)
		if it == nil {
			return
		}
		kind := it.kind()
		if kind != KindList && kind != KindZSet {
			return
		}
		if (w.op.Form == command.PopZSet) != (kind == KindZSet) {
			continue
		}
		v := k.popFrom(w.op, key, c)
		k.removePop(w)
		k.wakes = append(k.wakes, w.wake(&v))
	}
}

// blockingPop runs a blocking pop: at once from the first of its keys that
// holds elements; else it waits (a command entry of its own) or, in a
// transaction or script, answers the null a timeout answers.
func (k *Keyspace) blockingPop(op command.BlockingPop, c Ctx) resp.Value {
	want := KindList
	if op.Form == command.PopZSet {
		want = KindZSet
	}
	for _, key := range op.Keys {
		it := k.lookup(key, c.Now)
		if it == nil {
			continue
		}
		if it.kind() != want {
			return k.tagged(op, c, wrongType)
		}
		return k.tagged(op, c, k.popFrom(op, key, c))
	}
	if !c.Top {
		if op.NullReply() {
			return k.tagged(op, c, resp.Nil)
		}
		return k.tagged(op, c, resp.NilArray)
	}
	if op.Tag != nil && k.pops != nil {
		if _, dup := k.pops.byTag[string(op.Tag)]; dup {
			return resp.Error("ERR pop tag in use") // a node never reuses one
		}
	}
	w := &popWaiter{id: c.Index, op: op}
	w.op.Keys = make([][]byte, len(op.Keys))
	for i, key := range op.Keys {
		w.op.Keys[i] = clone(key)
	}
	if op.Dst != nil {
		w.op.Dst = clone(op.Dst)
	}
	if op.Tag != nil {
		w.op.Tag = clone(op.Tag)
		w.lease = addSat(c.Now, PopLease)
	}
	if op.Timeout > 0 {
		// One more ms, as for lock waiters: log time counts whole ms.
		w.deadline = addSat(c.Now, addSat(op.Timeout, 1))
	}
	k.addPop(w)
	return queuedReply(c.Index)
}

// tagged returns v, the reply of a blocking pop answered without waiting; for
// a tagged pop it also emits v as a wake for its tag.
func (k *Keyspace) tagged(op command.BlockingPop, c Ctx, v resp.Value) resp.Value {
	if op.Tag != nil && c.Write {
		// Waiter 0: no waiter was queued; the node that sent the pop has
		// its reply unless it was lost with a leader.
		k.wakes = append(k.wakes, Wake{Pop: true, Tag: string(op.Tag), Reply: &v})
	}
	return v
}

// popFrom pops for op from key, which holds a non-empty value of op's type,
// and returns op's reply.
func (k *Keyspace) popFrom(op command.BlockingPop, key []byte, c Ctx) resp.Value {
	switch op.Form {
	case command.PopMove:
		return k.lmove(key, op.Dst, op.Left, op.ToLeft, c)
	case command.PopZSet:
		return k.bzpop(key, !op.Left, c)
	}
	it := k.lookup(key, c.Now)
	l := it.coll.list.clone()
	var v resp.Value
	if op.Form == command.PopMany {
		v = resp.Array(resp.Bulk(clone(key)), resp.Array(popN(l, op.Left, op.Count)...))
	} else {
		v = resp.Array(resp.Bulk(clone(key)), resp.Bulk(l.pop(op.Left)))
	}
	k.storeList(key, it, l, c)
	return v
}

// POP.CANCEL key tag: 1 when the waiter tagged tag waited on key (it is gone
// now), 0 otherwise; either way a wake for tag (Cancel) tells the node.
func (k *Keyspace) popCancel(op command.PopCancel, c Ctx) resp.Value {
	v := resp.Zero
	if k.pops != nil {
		if w, ok := k.pops.byTag[string(op.Tag)]; ok {
			for _, key := range w.op.Keys {
				if string(key) == string(op.Key) {
					k.removePop(w)
					v = resp.One
					break
				}
			}
		}
	}
	k.wakes = append(k.wakes, Wake{Waiter: c.Index, Pop: true, Cancel: true, Tag: string(op.Tag), Reply: &v})
	return v
}

// POP.RENEW tag [tag ...]: the node holding these tags' clients renews their
// leases; the number of waiters renewed. A waiter keeps its id, so its place.
func (k *Keyspace) popRenew(op command.PopRenew, c Ctx) resp.Value {
	n := int64(0)
	if k.pops == nil {
		return resp.Zero
	}
	for _, tag := range op.Tags {
		w, ok := k.pops.byTag[string(tag)]
		if !ok {
			continue
		}
		k.removePop(w)
		cp := *w
		cp.lease = addSat(c.Now, PopLease)
		k.addPop(&cp)
		n++
	}
	return resp.Int(n)
}

// expirePops is a tick's work on waiters: those whose deadline has passed
// leave, answered with the null array of a timeout (at most
// MaxExpirePerTick; those of frozen slots stay).
func (k *Keyspace) expirePops(c Ctx) {
	if k.pops == nil {
		return
	}
	var due []*popWaiter
	k.pops.byTime.Scan(func(w *popWaiter) bool {
		if w.expiry() > c.Now || len(due) >= MaxExpirePerTick {
			return false
		}
		if !k.frozenKey(string(w.op.Keys[0])) {
			due = append(due, w)
		}
		return true
	})
	for _, w := range due {
		k.removePop(w)
		wk := w.wake(&resp.Value{Kind: resp.KindNullArray})
		wk.Lapsed = w.deadline == 0 || w.deadline > c.Now
		k.wakes = append(k.wakes, wk)
	}
}

// nextPopDeadline is the earliest expiry of a waiter; ok false when none.
func (k *Keyspace) nextPopDeadline() (int64, bool) {
	if k.pops == nil {
		return 0, false
	}
	var d int64
	found := false
	k.pops.byTime.Scan(func(w *popWaiter) bool {
		if k.frozenKey(string(w.op.Keys[0])) {
			return true
		}
		d, found = w.expiry(), true
		return false
	})
	return d, found
}

// dropPops removes the waiters on keys of slots [from, to] (a slot move's
// drop): each is woken with Moved, and its node queues it again where the
// slot went.
func (k *Keyspace) dropPops(from, to uint16) {
	if k.pops == nil {
		return
	}
	var doomed []*popWaiter
	k.pops.byID.Scan(func(w *popWaiter) bool {
		for _, key := range w.op.Keys {
			if s := shard.Slot(key); s >= from && s <= to {
				doomed = append(doomed, w)
				break
			}
		}
		return true
	})
	for _, w := range doomed {
		k.removePop(w)
		k.wakes = append(k.wakes, w.wake(nil))
	}
}

// popsCopy is the waiters for a snapshot: a copy-on-write copy (nil: none).
func (k *Keyspace) popsCopy() *btree.BTreeG[*popWaiter] {
	if k.pops == nil || k.pops.byID.Len() == 0 {
		return nil
	}
	return k.pops.byID.Copy()
}

// appendPops encodes the waiters (snapshot version 6, after the
// tombstones): a count, then each waiter by id: id, deadline, the command's
// name, form, flags (1 left, 2 to-left, 4 a destination follows), count,
// timeout, keys, destination, tag ("" none), lease.
func appendPops(buf []byte, t *btree.BTreeG[*popWaiter]) []byte {
	if t == nil {
		return binary.AppendUvarint(buf, 0)
	}
	buf = binary.AppendUvarint(buf, uint64(t.Len()))
	str := func(b []byte) {
		buf = binary.AppendUvarint(buf, uint64(len(b)))
		buf = append(buf, b...)
	}
	t.Scan(func(w *popWaiter) bool {
		buf = binary.AppendUvarint(buf, w.id)
		buf = binary.AppendVarint(buf, w.deadline)
		str([]byte(w.op.Cmd))
		flags := byte(0)
		if w.op.Left {
			flags |= 1
		}
		if w.op.ToLeft {
			flags |= 2
		}
		if w.op.Dst != nil {
			flags |= 4
		}
		buf = append(buf, byte(w.op.Form), flags)
		buf = binary.AppendVarint(buf, w.op.Count)
		buf = binary.AppendVarint(buf, w.op.Timeout)
		buf = binary.AppendUvarint(buf, uint64(len(w.op.Keys)))
		for _, key := range w.op.Keys {
			str(key)
		}
		if w.op.Dst != nil {
			str(w.op.Dst)
		}
		str(w.op.Tag)
		buf = binary.AppendVarint(buf, w.lease)
		return true
	})
	return buf
}

// readPops reads what appendPops wrote.
func readPops(br *bufio.Reader, k *Keyspace) error {
	n, err := binary.ReadUvarint(br)
	if err != nil || n > 1<<32 {
		return errors.New("bad waiter count")
	}
	for ; n > 0; n-- {
		w := &popWaiter{}
		if w.id, err = binary.ReadUvarint(br); err != nil {
			return err
		}
		if w.deadline, err = binary.ReadVarint(br); err != nil {
			return err
		}
		if w.op.Cmd, err = readString(br); err != nil {
			return err
		}
		form, err1 := br.ReadByte()
		flags, err2 := br.ReadByte()
		if err1 != nil || err2 != nil || form > byte(command.PopZSet) {
			return errors.New("bad waiter form")
		}
		w.op.Form, w.op.Left, w.op.ToLeft = command.PopForm(form), flags&1 != 0, flags&2 != 0
		if w.op.Count, err = binary.ReadVarint(br); err != nil {
			return err
		}
		if w.op.Timeout, err = binary.ReadVarint(br); err != nil {
			return err
		}
		nk, err := binary.ReadUvarint(br)
		if err != nil || nk == 0 || nk > 1<<20 {
			return errors.New("bad waiter keys")
		}
		for ; nk > 0; nk-- {
			key, err := readBytes(br)
			if err != nil {
				return err
			}
			w.op.Keys = append(w.op.Keys, key)
		}
		if flags&4 != 0 {
			if w.op.Dst, err = readBytes(br); err != nil {
				return err
			}
		}
		if w.op.Tag, err = readBytes(br); err != nil {
			return err
		}
		if w.lease, err = binary.ReadVarint(br); err != nil {
			return err
		}
		if len(w.op.Tag) == 0 {
			w.op.Tag = nil
		} else if k.pops != nil {
			if _, dup := k.pops.byTag[string(w.op.Tag)]; dup {
				return errors.New("duplicate waiter tag")
			}
		}
		if k.pops != nil {
			if _, dup := k.pops.byID.Get(w); dup {
				return errors.New("duplicate waiter")
			}
		}
		k.addPop(w)
	}
	return nil
}

// bzpop pops one member for BZPOPMIN (max false) or BZPOPMAX from the sorted
// set at key (present, non-empty): [key, member, score].
func (k *Keyspace) bzpop(key []byte, max bool, c Ctx) resp.Value {
	ms, ok := k.zpop(key, max, 1, c)
	if !ok || len(ms) == 0 {
		return resp.NilArray
	}
	return resp.Array(resp.Bulk(clone(key)), resp.BulkString(ms[0].name), zscoreReply(ms[0].score))
}
