package main

// kind is the kind of one operation; latencies and errors are kept per kind.
type kind int

const (
	kAcquire   kind = iota // SET name owner NX PX ttl [FENCE]
	kRelease               // EVALSHA compare-and-delete
	kKeepalive             // EVALSHA compare-and-pexpire
	kRead                  // PTTL of a held lock: a lock-status read
	kTrylock               // SET NX on a lock this client holds: finds it taken
	numKinds
)

var kindNames = [numKinds]string{"acquire", "release", "keepalive", "read", "trylock"}

func (k kind) String() string { return kindNames[k] }

// needsHeld reports whether an operation of this kind works on a lock the
// client already holds.
func (k kind) needsHeld() bool { return k != kAcquire }

// seedMix is the seed article's peak profile (20k acquires, 20k releases, 4k
// keepalives and 6k reads or try-locks that find the lock taken, of 50k ops/s),
// with the 12% split evenly between lock-status reads and taken try-locks. The
// weights are per 50 operations.
var seedMix = [numKinds]int{kAcquire: 20, kRelease: 20, kKeepalive: 4, kRead: 3, kTrylock: 3}

// mixer deals kinds in the proportions of its weights with smooth weighted
// round-robin (as nginx balances upstreams): every window of sum(weights)
// consecutive picks holds exactly weight[k] picks of k, and the picks of each
// kind are spread evenly rather than bunched. Deterministic, so the realised mix
// is the requested one however short the run; workers start at different phases
// so that they are not in lockstep. Ties go to the lower kind, so an acquire
// comes before the release it pairs with.
type mixer struct {
	weight  [numKinds]int
	current [numKinds]int
	total   int
}

func newMixer(weights [numKinds]int, phase int) *mixer {
	m := &mixer{weight: weights}
	for _, w := range weights {
		m.total += w
	}
	if m.total > 0 {
		for i := 0; i < phase%m.total; i++ {
			m.next()
		}
	}
	return m
}

func (m *mixer) next() kind {
	best := kind(-1)
	for k := kind(0); k < numKinds; k++ {
		if m.weight[k] == 0 {
			continue
		}
		m.current[k] += m.weight[k]
		if best < 0 || m.current[k] > m.current[best] {
			best = k
		}
	}
	m.current[best] -= m.total
	return best
}

// slot is one planned operation of a mixed batch: its kind and, for a kind that
// needs a held lock, the index of that lock in the client's held list (oldest
// first).
type slot struct {
	kind kind
	held int
}

// planMixed plans one batch of n operations for a client holding `held` locks,
// oldest first. A release takes the oldest lock not already released in this
// batch (so every lock is held for a while, and is kept alive meanwhile); a
// keepalive, read or try-lock uses a random (pick) lock among those not released
// in this batch. When the kind dealt needs a held lock and none is left, the
// slot becomes an acquire instead and fallbacks counts it: the mix then drifts
// from the requested one, which the report shows.
func planMixed(m *mixer, held, n int, pick func(n int) int) (plan []slot, fallbacks int) {
	released := 0 // locks [0, released) are released by this batch
	for len(plan) < n {
		k := m.next()
		if k.needsHeld() && released >= held {
			plan = append(plan, slot{kind: kAcquire, held: -1})
			fallbacks++
			continue
		}
		switch k {
		case kAcquire:
			plan = append(plan, slot{kind: kAcquire, held: -1})
		case kRelease:
			plan = append(plan, slot{kind: kRelease, held: released})
			released++
		default:
			plan = append(plan, slot{kind: k, held: released + pick(held-released)})
		}
	}
	return plan, fallbacks
}
