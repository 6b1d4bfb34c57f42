package fsm

import (
	"fmt"
	"math"
	"strconv"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/outcome"
	"github.com/lockd/lockd/resp"
)

// KindLock is a lock record (LOCK.* commands): its mode, its holders (each with
// its own fencing token and lease) and its FIFO queue of waiters.
const KindLock Kind = 3

// lockRec is a lock record in its working form: what view returns and the
// LOCK.* commands change. A stored item keeps it packed (lockData); view
// always returns fresh slices, so changing a lockRec never changes a stored
// item.
//
// Tokens are entry indexes, so one entry grants a name at most once (granted
// records the entry that did): when a release frees room for several waiters
// (readers behind a writer, semaphore slots), the head waiter is granted in the
// freeing entry and the next ones in the tick entries that follow at once, each
// with a token of its own.
type lockRec struct {
	mode      command.LockMode
	limit     int64 // semaphore size; 1 exclusive; 0 shared (unbounded)
	holders   []holder
	waiters   []waiter // FIFO
	delay     int64    // log time before which nobody is granted (lock-delay after an expiry); 0 none
	lockDelay int64    // the namespace's lock-delay when the record was stored: what a holder's expiry starts
	granted   uint64   // index of the entry that last granted this name
	expired   []holder // holders view found expired (noted when stored; never stored)
}

type holder struct {
	owner    string
	session  uint64 // 0: a lease; else held while the session lives
	token    uint64
	count    int64  // re-entry count (REENTRANT), 1 otherwise
	since    int64  // log time of the grant
	deadline int64  // log time the lease ends (sessionBound for a session's lock)
	via      uint64 // the waiter it was granted from; 0 when granted at once
}

// waiter is a blocked LOCK.ACQUIRE. Its id is the index of the entry that queued
// it; the node whose client is blocked learns the outcome from a Wake.
type waiter struct {
	id        uint64
	owner     string
	session   uint64
	ttl       int64
	limit     int64
	since     int64 // log time it was queued
	deadline  int64 // log time its wait ends
	mode      command.LockMode
	reentrant bool
}

// lockData is a lock record as a stored item keeps it: a lockRec (without
// expired) plus the item's wake time, packed for memory. Most records have one
// holder granted at once, no waiter and no lock-delay: they are one 32-byte
// allocation, the holder inline and more nil. Everything else sits in more.
// The first holder's owner is not here but in the item's val (unused by a
// lock item), which shares one allocation with the item's key (join); when
// more is nil, the first holder's token and lease deadline are the item's own
// token and deadline (plain requires it), so they are not kept twice.
// Like every stored item it is immutable: a change packs a new one
// (packLock), and viewing an item that holds packLock(r) gives back every
// field of r exactly, so the snapshot bytes do not depend on the layout.
type lockData struct {
	// The first holder, but for its owner (the item's val), its token and
	// deadline (the item's when more is nil, else in more), its via (in
	// more; 0 when more is nil) and, when more is set, its count (in more);
	// zero when held is false.
	session uint64
	since   int64
	more    *lockMore // nil: see plain
	count   int32     // the first holder's re-entry count when more is nil
	mode    command.LockMode
	held    bool // the first holder is set
}

// lockMore is the rarer part of a stored lock record.
type lockMore struct {
	holders   []holder // the holders after the first
	waiters   []waiter // FIFO
	limit     int64
	delay     int64
	lockDelay int64
	wake      int64  // log time the record needs a tick (lockRec.wakeAt); 0 none
	granted   uint64 // the record's
	via       uint64 // the first holder's
	count     int64  // the first holder's
	token     uint64 // the first holder's
	deadline  int64  // the first holder's
}

// plainLimit is the limit a record of mode has unless it is a semaphore: the
// limit a packed record without lockMore stands for.
func plainLimit(mode command.LockMode) int64 {
	if mode == command.LockShared {
		return 0
	}
	return 1
}

// plain reports whether r, with wake time wake, kept by an item whose token
// is token and whose deadline is deadline, packs without lockMore: one
// holder, granted at once by the entry that granted the name last, with the
// item's token and deadline, re-entered fewer than 2^31 times, no waiter, no
// lock-delay (neither running nor configured), no wake time and its mode's
// plain limit.
func plain(r *lockRec, wake, deadline int64, token uint64) bool {
	return len(r.holders) == 1 && r.holders[0].via == 0 && r.granted == r.holders[0].token &&
		r.holders[0].token == token && r.holders[0].deadline == deadline &&
		r.holders[0].count <= math.MaxInt32 && len(r.waiters) == 0 && r.delay == 0 && r.lockDelay == 0 &&
		wake == 0 && r.limit == plainLimit(r.mode)
}

// packLock packs r, with the wake time wake, for storing in an item whose
// token is token and whose deadline is deadline: that item keeps owner, the
// first holder's owner ("" when r has no holder), as its val. The stored
// record shares no slice with r.
func packLock(r *lockRec, wake, deadline int64, token uint64) (d *lockData, owner string) {
	d = &lockData{mode: r.mode}
	var rest []holder
	var first holder
	if len(r.holders) > 0 {
		first = r.holders[0]
		owner = first.owner
		d.session, d.since, d.held = first.session, first.since, true
		rest = r.holders[1:]
	}
	if plain(r, wake, deadline, token) {
		d.count = int32(first.count)
	} else {
		d.more = &lockMore{holders: append([]holder(nil), rest...), waiters: append([]waiter(nil), r.waiters...),
			limit: r.limit, delay: r.delay, lockDelay: r.lockDelay, wake: wake, granted: r.granted,
			via: first.via, count: first.count, token: first.token, deadline: first.deadline}
	}
	return d, owner
}

// detached returns a copy of it, in no tree, whose token and deadline may
// be changed without changing anything else it holds (setDeadline): a plain
// lock record takes its first holder's token and lease deadline from its
// item, so the copy's record keeps them in a lockMore instead.
func (it *item) detached() *item {
	cp := *it
	if it.kind() == KindLock && it.lock.more == nil {
		h := it.first()
		d := *it.lock
		d.more = &lockMore{limit: plainLimit(d.mode), granted: h.token, count: h.count, token: h.token, deadline: h.deadline}
		cp.lock = &d
	}
	return &cp
}

// first is a lock item's first holder; its lock's held must be set.
func (it *item) first() holder {
	d := it.lock
	h := holder{owner: it.val(), session: d.session, token: it.token, count: int64(d.count), since: d.since, deadline: it.deadline}
	if m := d.more; m != nil {
		h.via, h.count, h.token, h.deadline = m.via, m.count, m.token, m.deadline
	}
	return h
}

// granted is the index of the entry that last granted a lock item's name.
func (it *item) granted() uint64 {
	if it.lock.more == nil {
		return it.token
	}
	return it.lock.more.granted
}

// limit, delay, lockDelay and wake are the record's; 0 when more is nil (limit: plainLimit).
func (d *lockData) limit() int64 {
	if d.more == nil {
		return plainLimit(d.mode)
	}
	return d.more.limit
}

func (d *lockData) delay() int64 {
	if d.more == nil {
		return 0
	}
	return d.more.delay
}

// lockDelay is the namespace's lock-delay when the record was stored.
func (d *lockData) lockDelay() int64 {
	if d.more == nil {
		return 0
	}
	return d.more.lockDelay
}

func (d *lockData) wake() int64 {
	if d.more == nil {
		return 0
	}
	return d.more.wake
}

// numHolders and numWaiters count the stored holders and waiters (expired
// ones included).
func (d *lockData) numHolders() int {
	n := 0
	if d.held {
		n = 1
	}
	if d.more != nil {
		n += len(d.more.holders)
	}
	return n
}

func (d *lockData) numWaiters() int {
	if d.more == nil {
		return 0
	}
	return len(d.more.waiters)
}

// holders yields the stored holders of a lock item in order (for h := range
// it.holders).
func (it *item) holders(yield func(holder) bool) {
	d := it.lock
	if !d.held || !yield(it.first()) {
		return
	}
	if d.more != nil {
		for _, h := range d.more.holders {
			if !yield(h) {
				return
			}
		}
	}
}

// waiters returns the stored waiters in queue order. The slice is the stored
// record's: read it, never change it.
func (d *lockData) waiters() []waiter {
	if d.more == nil {
		return nil
	}
	return d.more.waiters
}

// Wake tells the node that holds a blocked LOCK.ACQUIRE what became of it:
// Token is the grant's fencing token, 0 when the waiter left the queue without
// a grant (its wait or its session ended, or the lock was deleted). Moved is
// set (Token 0) when the lock's slot left this group while the waiter still
// waited: the node re-queues the acquire in the group the slot went to.
//
// A blocked pop's wake (bpop.go) has Pop set, the node's Tag of the request
// (command.BlockingPop.Tag; "" for an untagged pop) and the pop's whole
// reply in Reply: computed by the entry that answered a tagged pop at once,
// served it (the popped elements, or WRONGTYPE for a BLMOVE whose
// destination holds another type) or timed it out (a null array); with Moved
// set, Reply is nil and the node queues the pop again where the slot went.
// A POP.CANCEL's own wake has Cancel set and its reply (1 withdrawn, 0 not
// waiting); a tagged pop answered at once has Waiter 0. Every node applies the entry, so the node that holds the client
// learns the reply from its own apply: nothing is kept in the state machine
// for it.
type Wake struct {
	Waiter uint64
	Token  uint64
	Moved  bool
	Pop    bool
	Cancel bool
	Lapsed bool // a blocked pop's lease ran out (no POP.RENEW): its node queues it again
	Tag    string
	Reply  *resp.Value
}

// TakeWakes returns and forgets the wakes of the entries applied since the last
// call. Call it from the apply goroutine.
func (k *Keyspace) TakeWakes() []Wake {
	w := k.wakes
	k.wakes = nil
	return w
}

// queuedReply is the reply of a LOCK.ACQUIRE that joined a wait queue:
// outcome.Queued, the waiter's id in Int (text "QUEUED <waiter-id>", for
// logs). No client ever sees it: the node that proposed the entry turns it
// into the grant or nil the wait ends with.
func queuedReply(id uint64) resp.Value {
	v := resp.Failed(outcome.Queued, "QUEUED "+strconv.FormatUint(id, 10))
	v.Int = int64(id)
	return v
}

// QueuedWaiter reports whether v is the reply of an acquire that was queued, and
// the waiter's id.
func QueuedWaiter(v resp.Value) (uint64, bool) {
	if v.Outcome != outcome.Queued {
		return 0, false
	}
	return uint64(v.Int), true
}

// admits reports whether a grant of mode/limit fits beside the holders.
func (r *lockRec) admits(mode command.LockMode, limit int64) bool {
	switch {
	case len(r.holders) == 0:
		return true
	case mode != r.mode:
		return false
	case mode == command.LockShared:
		return true
	case mode == command.LockSemaphore:
		return limit == r.limit && int64(len(r.holders)) < r.limit
	}
	return false
}

// limitMismatch reports whether op is a semaphore acquire whose LIMIT differs
// from the semaphore's (its holders' or its waiters'): refused at once.
func (r *lockRec) limitMismatch(op command.LockAcquire) bool {
	if op.Mode != command.LockSemaphore {
		return false
	}
	if len(r.holders) > 0 && r.mode == command.LockSemaphore && r.limit != op.Limit {
		return true
	}
	for _, w := range r.waiters {
		if w.mode == command.LockSemaphore && w.limit != op.Limit {
			return true
		}
	}
	return false
}

// add makes h a holder, the record taking h's mode when it was free.
func (r *lockRec) add(h holder, mode command.LockMode, limit int64) {
	if len(r.holders) == 0 {
		r.mode, r.limit = mode, limit
	}
	r.holders = append(r.holders, h)
	r.granted = h.token
}

// view returns the record as it stands at now, with fresh slices: holders whose
// lease ended are gone (each expiry starting the lock-delay), and waiters whose
// wait or session ended are gone (their ids in dropped). changed tells whether
// anything was left out.
func (k *Keyspace) view(it *item, now int64) (v lockRec, dropped []uint64, changed bool) {
	r := it.lock
	v = lockRec{mode: r.mode, limit: r.limit(), delay: r.delay(), lockDelay: r.lockDelay(), granted: it.granted()}
	v.holders = make([]holder, 0, r.numHolders()+1)
	for h := range it.holders {
		if h.deadline > now {
			v.holders = append(v.holders, h)
			continue
		}
		changed = true
		v.expired = append(v.expired, h)
		if v.lockDelay > 0 {
			v.delay = max(v.delay, addSat(h.deadline, v.lockDelay))
		}
	}
	v.waiters = make([]waiter, 0, r.numWaiters()+1)
	for _, w := range r.waiters() {
		if _, ok := k.sessions[w.session]; w.deadline > now && (w.session == 0 || ok) {
			v.waiters = append(v.waiters, w)
			continue
		}
		changed = true
		dropped = append(dropped, w.id)
	}
	if v.delay != 0 && v.delay <= now {
		v.delay = 0
		changed = true
	}
	if len(v.waiters) > 0 && v.delay == 0 && v.admits(v.waiters[0].mode, v.waiters[0].limit) {
		changed = true // a grant is due
	}
	return v, dropped, changed
}

// lockOf returns the lock record at name as it stands at now: (nil, empty) when
// the key is absent, an error reply when it holds another type.
func (k *Keyspace) lockOf(name []byte, now int64) (*item, lockRec, []uint64, bool, *resp.Value) {
	it := k.lookup(name, now)
	if it == nil {
		return nil, lockRec{}, nil, false, nil
	}
	if it.kind() != KindLock {
		return nil, lockRec{}, nil, false, &wrongType
	}
	v, dropped, changed := k.view(it, now)
	return it, v, dropped, changed, nil
}

// settle grants the head waiter when it fits: the hand-over inside the entry
// that freed the lock. It grants at most once per entry (see lockRec).
func (k *Keyspace) settle(name []byte, r *lockRec, c Ctx) {
	if len(r.waiters) == 0 || r.granted == c.Index || r.delay > c.Now {
		return
	}
	w := r.waiters[0]
	if !r.admits(w.mode, w.limit) {
		return
	}
	r.waiters = r.waiters[1:]
	deadline := addSat(c.Now, w.ttl)
	if w.session != 0 {
		deadline = sessionBound
	}
	h := holder{owner: w.owner, session: w.session, token: c.Index, count: 1, since: c.Now, deadline: deadline, via: w.id}
	r.add(h, w.mode, w.limit)
	k.stats.Grants++
	k.publishGrant(name, h)
	k.wakes = append(k.wakes, Wake{Waiter: w.id, Token: c.Index})
}

// wakeAt is when the record next needs an entry of its own while someone
// waits: now for a grant the last entry could not make, else the end of the
// lock-delay, of the first lease, or of the first wait (so that a waiter whose
// client is gone is dropped even if nothing else touches the name). Only a
// record with waiters has one (lockTimers holds exactly those).
func (r *lockRec) wakeAt(now int64) int64 {
	if len(r.waiters) == 0 {
		return 0
	}
	if r.delay <= now && r.admits(r.waiters[0].mode, r.waiters[0].limit) {
		return now
	}
	w := r.delay
	for _, h := range r.holders {
		if h.deadline != sessionBound && (w == 0 || h.deadline < w) {
			w = h.deadline
		}
	}
	for _, x := range r.waiters {
		if w == 0 || x.deadline < w {
			w = x.deadline
		}
	}
	return w
}

// storeLock settles the record, tells dropped waiters, and stores it: as long as
// its last holder, waiter or lock-delay lasts (then it disappears by itself), or
// not at all when nothing is left.
func (k *Keyspace) storeLock(name []byte, old *item, rec lockRec, dropped []uint64, c Ctx) {
	for _, id := range dropped {
		k.wakes = append(k.wakes, Wake{Waiter: id})
	}
	k.settle(name, &rec, c)
	for _, h := range rec.expired {
		k.holdExpired(name, h)
	}
	rec.expired = nil
	rec.lockDelay = k.namespaceFor(name).LockDelay
	var deadline int64
	for _, h := range rec.holders {
		deadline = max(deadline, addSat(h.deadline, rec.lockDelay))
	}
	for _, w := range rec.waiters {
		deadline = max(deadline, w.deadline)
	}
	deadline = max(deadline, rec.delay)
	if deadline <= c.Now {
		if old != nil {
			k.deleteItem(old) // its waiters were granted or dropped above
		}
		return
	}
	token := rec.granted
	if old != nil {
		token = max(token, old.token)
	}
	k.putItem(newLockItem(name, &rec, rec.wakeAt(c.Now), deadline, token))
}

// dropWaiters tells the waiters of a lock item that is being deleted or
// overwritten that they will not be granted.
func (k *Keyspace) dropWaiters(it *item) {
	if it == nil || it.kind() != KindLock {
		return
	}
	for _, w := range it.lock.waiters() {
		k.wakes = append(k.wakes, Wake{Waiter: w.id})
	}
}

// LOCK.ACQUIRE name owner [PX ms | SESSION id] [WAIT ms] [SHARED | LIMIT n]
// [REENTRANT]: the token of the grant; nil when the lock is not available (and
// WAIT is 0, or the command runs in a transaction or script, which never
// block); a QUEUED reply for the proposing node when the acquire joined the
// queue. An owner that already holds the lock (same session) gets its grant
// back (idempotent after an unknown outcome), with REENTRANT counted; one that
// already waits keeps its place.
func (k *Keyspace) lockAcquire(op command.LockAcquire, c Ctx) resp.Value {
	ns := k.namespaceFor(op.Name)
	if ns.Safety == "correctness" && len(ns.FencedBy) == 0 {
		k.publishReject(op.Name, op.Owner, "safety")
		return resp.Error(fmt.Sprintf("ERR namespace '%s' is declared SAFETY correctness but names no fenced resource: set one with NAMESPACE.SET %s FENCEDBY <resource>", ns.Prefix, ns.Prefix))
	}
	ttl := op.TTL
	if !op.TTLSet && ns.DefaultTTL > 0 {
		ttl = ns.DefaultTTL
	}
	if ns.MaxTTL > 0 && ttl > ns.MaxTTL {
		if op.TTLSet {
			k.publishReject(op.Name, op.Owner, "max-ttl")
			return resp.Error(fmt.Sprintf("ERR PX %d exceeds the MAXTTL of namespace '%s' (%d ms)", ttl, ns.Prefix, ns.MaxTTL))
		}
		ttl = ns.MaxTTL
	}
	it, rec, dropped, changed, errv := k.lockOf(op.Name, c.Now)
	if errv != nil {
		return *errv
	}
	deadline := addSat(c.Now, ttl)
	if op.Session != 0 {
		if _, ok := k.sessions[op.Session]; !ok {
			return command.ErrNoSession.Reply()
		}
		deadline = sessionBound
	}
	if rec.limitMismatch(op) {
		return resp.Error("ERR LIMIT does not match the semaphore's limit")
	}
	k.settle(op.Name, &rec, c)
	// unchanged answers v, storing the record only if view or settle changed
	// it (settle grants only where view saw a grant due, so changed covers it).
	unchanged := func(v resp.Value) resp.Value {
		if changed {
			k.storeLock(op.Name, it, rec, dropped, c)
		}
		return v
	}
	for i, h := range rec.holders {
		if h.owner == string(op.Owner) && h.session == op.Session {
			if op.Reentrant {
				rec.holders[i].count++
			}
			rec.holders[i].deadline = max(h.deadline, deadline)
			k.sessionHold(op.Session, op.Name)
			k.storeLock(op.Name, it, rec, dropped, c)
			return resp.Int(int64(h.token))
		}
	}
	for _, w := range rec.waiters {
		if w.owner == string(op.Owner) && w.session == op.Session && op.Wait > 0 && c.Top {
			return unchanged(queuedReply(w.id))
		}
	}
	if len(rec.waiters) == 0 && rec.delay == 0 && rec.granted != c.Index && rec.admits(op.Mode, op.Limit) {
		h := holder{owner: string(op.Owner), session: op.Session, token: c.Index, count: 1, since: c.Now, deadline: deadline}
		rec.add(h, op.Mode, op.Limit)
		k.stats.Grants++
		k.publishGrant(op.Name, h)
		k.sessionHold(op.Session, op.Name)
		k.storeLock(op.Name, it, rec, dropped, c)
		return resp.Int(int64(c.Index))
	}
	if rec.delay > c.Now {
		k.stats.DelayHits++
		if op.Wait == 0 || !c.Top {
			k.publishReject(op.Name, op.Owner, "lock-delay")
		}
	}
	if op.Wait == 0 || !c.Top {
		return unchanged(resp.Nil)
	}
	limit := int64(command.DefaultMaxWaiters)
	if ns.MaxWaiters >= 0 && ns.Prefix != "" {
		limit = ns.MaxWaiters
	}
	if int64(len(rec.waiters)) >= limit {
		k.stats.QueueFull++
		k.publishReject(op.Name, op.Owner, "queue-full")
		hint := retryHint(rec, c.Now)
		full := resp.Failed(outcome.QueueFull, fmt.Sprintf("QUEUEFULL the wait queue of '%s' is full (%d waiters); retry in %d ms", op.Name, limit, hint))
		full.Int = hint // the door's Retry-After (HTTP)
		return unchanged(full)
	}
	// Log time counts whole milliseconds from a stamp truncated to one, so a
	// deadline op.Wait after c.Now could come up to 1 ms before op.Wait has
	// passed since the request arrived; one more keeps "waits at least WAIT ms"
	// (TestWaitLastsAtLeastWait; the client's own timer usually ends it first).
	rec.waiters = append(rec.waiters, waiter{id: c.Index, owner: string(op.Owner), session: op.Session, ttl: ttl,
		mode: op.Mode, limit: op.Limit, reentrant: op.Reentrant, since: c.Now, deadline: addSat(c.Now, addSat(op.Wait, 1))})
	k.sessionHold(op.Session, op.Name)
	k.storeLock(op.Name, it, rec, dropped, c)
	return queuedReply(c.Index)
}

// retryHint is when a full queue is worth trying again: when the first lease
// ends, at most a second.
func retryHint(r lockRec, now int64) int64 {
	hint := int64(1000)
	for _, h := range r.holders {
		if h.deadline != sessionBound {
			hint = min(hint, max(h.deadline-now, 1))
		}
	}
	return hint
}

// findHolder returns the index of the live holder with token, or -1.
func findHolder(live []holder, token int64) int {
	for i, h := range live {
		if int64(h.token) == token {
			return i
		}
	}
	return -1
}

// changeHolder applies change to the holders when token is one of them, stores
// the result (handing freed room to waiters) and answers 1; 0 when the token
// holds nothing.
func (k *Keyspace) changeHolder(name []byte, token int64, c Ctx, change func(hs []holder, i int) []holder) resp.Value {
	it, rec, dropped, changed, errv := k.lockOf(name, c.Now)
	if errv != nil {
		return *errv
	}
	i := findHolder(rec.holders, token)
	if i < 0 {
		if changed {
			k.storeLock(name, it, rec, dropped, c)
		}
		if k.wasHeld(name, token) {
			k.noteLate(name) // the lease ended while its holder was still working
		}
		return resp.Zero
	}
	rec.holders = change(rec.holders, i)
	k.storeLock(name, it, rec, dropped, c)
	return resp.One
}

// LOCK.RELEASE name token: 1 released (or one re-entry undone), 0 not a holder.
func (k *Keyspace) lockRelease(op command.LockRelease, c Ctx) resp.Value {
	return k.changeHolder(op.Name, op.Token, c, func(hs []holder, i int) []holder {
		if hs[i].count > 1 {
			hs[i].count--
			return hs
		}
		k.holdReleased(op.Name, hs[i])
		return append(hs[:i], hs[i+1:]...)
	})
}

// LOCK.EXTEND name token ms: 1 when the holder's lease now ends ms from now (a
// session's lock lives as long as its session: unchanged).
func (k *Keyspace) lockExtend(op command.LockExtend, c Ctx) resp.Value {
	return k.changeHolder(op.Name, op.Token, c, func(hs []holder, i int) []holder {
		if hs[i].session == 0 {
			hs[i].deadline = addSat(c.Now, op.TTL)
		}
		return hs
	})
}

// LOCK.CANCEL name waiter [RELEASE]: nil when the waiter was still queued (it
// is gone now) or is unknown; the token when it had been granted already (given
// back with RELEASE).
func (k *Keyspace) lockCancel(op command.LockCancel, c Ctx) resp.Value {
	it, rec, dropped, changed, errv := k.lockOf(op.Name, c.Now)
	if errv != nil || it == nil {
		return resp.Nil
	}
	for i, id := range dropped {
		if id == op.Waiter { // its wait ended: the canceller hears nil here
			dropped = append(dropped[:i:i], dropped[i+1:]...)
			break
		}
	}
	for i, w := range rec.waiters {
		if w.id == op.Waiter {
			rec.waiters = append(rec.waiters[:i], rec.waiters[i+1:]...)
			k.storeLock(op.Name, it, rec, dropped, c)
			return resp.Nil
		}
	}
	for i, h := range rec.holders {
		if h.via == op.Waiter {
			if op.Release {
				rec.holders = append(rec.holders[:i], rec.holders[i+1:]...)
				changed = true
				k.holdReleased(op.Name, h)
			}
			if changed {
				k.storeLock(op.Name, it, rec, dropped, c)
			}
			return resp.Int(int64(h.token))
		}
	}
	if changed {
		k.storeLock(op.Name, it, rec, dropped, c)
	}
	return resp.Nil
}

// LOCK.VALIDATE name token: 1 if the token is held now (a sequencer check).
func (k *Keyspace) lockValidate(op command.LockValidate, c Ctx) resp.Value {
	_, rec, _, _, errv := k.lockOf(op.Name, c.Now)
	if errv != nil {
		return *errv
	}
	if findHolder(rec.holders, op.Token) < 0 {
		return resp.Zero
	}
	return resp.One
}

var modeNames = map[command.LockMode]string{0: "none", command.LockExclusive: "exclusive", command.LockShared: "shared", command.LockSemaphore: "semaphore"}

// LOCK.INFO name: mode, limit, holders (owner, session, token, held_for_ms,
// ttl_ms, count), waiters (id, owner, session, mode, waited_ms, wait_left_ms) in
// queue order, the queue length and the lock-delay left; nil when the name has
// no holder, waiter or lock-delay.
func (k *Keyspace) lockInfo(op command.LockInfo, c Ctx) resp.Value {
	it, rec, _, _, errv := k.lockOf(op.Name, c.Now)
	if errv != nil {
		return *errv
	}
	if it == nil || (len(rec.holders) == 0 && len(rec.waiters) == 0 && rec.delay == 0) {
		return resp.Nil
	}
	hs := make([]resp.Value, len(rec.holders))
	for i, h := range rec.holders {
		ttl := h.deadline - c.Now
		if h.session != 0 {
			ttl = -1 // as long as the session lives
		}
		hs[i] = resp.Map(
			resp.BulkString("owner"), resp.BulkString(h.owner),
			resp.BulkString("session"), resp.Int(int64(h.session)),
			resp.BulkString("token"), resp.Int(int64(h.token)),
			resp.BulkString("held_for_ms"), resp.Int(c.Now-h.since),
			resp.BulkString("ttl_ms"), resp.Int(ttl),
			resp.BulkString("count"), resp.Int(h.count),
		)
	}
	ws := make([]resp.Value, len(rec.waiters))
	for i, w := range rec.waiters {
		ws[i] = resp.Map(
			resp.BulkString("waiter"), resp.Int(int64(w.id)),
			resp.BulkString("owner"), resp.BulkString(w.owner),
			resp.BulkString("session"), resp.Int(int64(w.session)),
			resp.BulkString("mode"), resp.BulkString(modeNames[w.mode]),
			resp.BulkString("waited_ms"), resp.Int(c.Now-w.since),
			resp.BulkString("wait_left_ms"), resp.Int(w.deadline-c.Now),
		)
	}
	mode, limit := rec.mode, rec.limit
	if len(rec.holders) == 0 {
		mode, limit = 0, 0
	}
	var delay int64
	if rec.delay > c.Now {
		delay = rec.delay - c.Now
	}
	return resp.Map(
		resp.BulkString("mode"), resp.BulkString(modeNames[mode]),
		resp.BulkString("limit"), resp.Int(limit),
		resp.BulkString("holders"), resp.Array(hs...),
		resp.BulkString("waiters"), resp.Array(ws...),
		resp.BulkString("queue_length"), resp.Int(int64(len(ws))),
		resp.BulkString("lock_delay_ms"), resp.Int(delay),
	)
}

// settleDue is a tick's work on locks: every record whose wake time has come
// (a lease ended or a lock-delay ran out while someone waits, or a grant the
// previous entry could not make) is settled, at most MaxExpirePerTick of them.
func (k *Keyspace) settleDue(c Ctx) {
	var due []*item
	k.lockTimers.Scan(func(it *item) bool {
		if it.lock.wake() > c.Now || len(due) >= MaxExpirePerTick {
			return false
		}
		if !k.frozenKey(it.key()) { // a frozen slot's locks do not change
			due = append(due, it)
		}
		return true
	})
	for _, it := range due {
		rec, dropped, _ := k.view(it, c.Now)
		k.storeLock([]byte(it.key()), it, rec, dropped, c)
	}
}

// WouldWait guesses, from the state as it stands at log time now, whether the
// blocking acquire op (WAIT > 0) would join its name's wait queue rather than
// be answered at once: the record as lockAcquire sees it (view) has live
// waiters, or a lock-delay, or live holders that do not admit op and do not
// include its owner, and op's LIMIT fits. Namespace refusals (MAXTTL, SAFETY,
// an unknown session) are not foreseen. It changes nothing and decides
// nothing — the entry's apply does — so a wrong guess costs only when the
// entry is proposed (the leader lingers such entries, raftstore's
// linger.go). Callers hold the state's read lock.
func (k *Keyspace) WouldWait(op command.LockAcquire, now int64) bool {
	if op.Wait <= 0 {
		return false
	}
	it, rec, _, _, errv := k.lockOf(op.Name, now)
	if it == nil || errv != nil || rec.limitMismatch(op) {
		return false // free, another type, or refused at once
	}
	for _, h := range rec.holders {
		if h.owner == string(op.Owner) && h.session == op.Session {
			return false // a re-entry or an extension: answered at once
		}
	}
	return len(rec.waiters) > 0 || rec.delay != 0 || !rec.admits(op.Mode, op.Limit) // lockAcquire's grant test
}
