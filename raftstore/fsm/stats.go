package fsm

import "sort"

// LockStats counts what the lock records hold and what happened to them. The
// gauges (Locks, Holders, Waiters) are the stored records' (an expired holder
// counts until its record is next touched); the counters run since the keyspace
// was created or restored. They are metrics, not state: never in a snapshot,
// and no reply depends on them.
type LockStats struct {
	Locks, Holders, Waiters int64
	Grants                  int64 // grants, at once or to a waiter
	Releases                int64 // holds given back (release, session close, cancel)
	Expiries                int64 // holds that ended because a lease or session ran out
	DelayHits               int64 // acquires refused or queued because of a lock-delay
	QueueFull               int64 // acquires refused with QUEUEFULL
	// LateOps counts, by namespace prefix ("" outside any), the releases and
	// extends that came after the holder's lease had ended: the holder was
	// still working when its lock expired.
	LateOps map[string]int64
}

// LockStats returns a copy of the lock statistics.
func (k *Keyspace) LockStats() LockStats {
	st := k.stats
	st.LateOps = make(map[string]int64, len(k.stats.LateOps))
	for ns, n := range k.stats.LateOps {
		st.LateOps[ns] = n
	}
	return st
}

// Namespaces returns the namespaces' prefixes, sorted.
func (st LockStats) Namespaces() []string {
	out := make([]string, 0, len(st.LateOps))
	for ns := range st.LateOps {
		out = append(out, ns)
	}
	sort.Strings(out)
	return out
}

// account adds (sign 1) or removes (sign -1) a stored item's lock gauges.
func (k *Keyspace) account(it *item, sign int64) {
	if it.kind() != KindLock {
		return
	}
	k.stats.Locks += sign
	k.stats.Holders += sign * int64(it.lock.numHolders())
	k.stats.Waiters += sign * int64(it.lock.numWaiters())
}

func (k *Keyspace) noteLate(name []byte) {
	if k.stats.LateOps == nil {
		k.stats.LateOps = map[string]int64{}
	}
	k.stats.LateOps[k.namespaceFor(name).Prefix]++
}

// holdReleased notes a hold given back (release, session close, cancel):
// counted and published.
func (k *Keyspace) holdReleased(name []byte, h holder) {
	k.stats.Releases++
	k.publishHold("release", name, h)
}

// recentExpiries bounds the expired grants remembered for LateOps.
const recentExpiries = 4096

// holdExpired notes a hold that ended because its lease or session ran out:
// counted, published, and its token remembered for a while, so that a late
// release or extend by the holder can be counted (LateOps).
func (k *Keyspace) holdExpired(name []byte, h holder) {
	k.publishHold("expire", name, h)
	token := h.token
	k.stats.Expiries++
	if k.expiredRecent == nil {
		k.expiredRecent = map[uint64]string{}
	}
	if _, ok := k.expiredRecent[token]; !ok {
		k.expiredOrder = append(k.expiredOrder, token)
	}
	k.expiredRecent[token] = string(name)
	for len(k.expiredOrder) > recentExpiries {
		delete(k.expiredRecent, k.expiredOrder[0])
		k.expiredOrder = k.expiredOrder[1:]
	}
}

// wasHeld reports whether token held name until its lease ran out: its record
// still lists it, expired, or it expired lately.
func (k *Keyspace) wasHeld(name []byte, token int64) bool {
	if it, ok := k.items.Get(probe(name)); ok && it.kind() == KindLock {
		for h := range it.holders {
			if int64(h.token) == token {
				return true
			}
		}
	}
	n, ok := k.expiredRecent[uint64(token)]
	return ok && n == string(name)
}
