package fsm

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
)

// TestLockProperties applies random lock traffic (try-once and queued acquires
// in every mode, releases, extends, cancels, sessions opening, closing and
// expiring, ticks, namespaces with lock-delay) and checks after every entry:
// no record holds more than its mode allows, tokens per name only rise, queued
// waiters of a name are granted in queue order, every waiter hears exactly one
// outcome, and in the end (time runs on, holders release) nobody starves.
func TestLockProperties(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { lockProperties(t, seed) })
	}
}

func lockProperties(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 99))
	h := newHarness(t)
	names := []string{"a", "b", "ns/c"}
	lastToken := map[string]uint64{}
	lastGrantedWaiter := map[string]uint64{}
	waiterName := map[uint64]string{}
	outcome := map[uint64]bool{} // waiter -> heard
	held := map[string][]int64{} // tokens handed out, maybe still held
	var sessions []uint64
	var trace []string
	defer func() {
		if t.Failed() {
			for _, l := range trace {
				t.Log(l)
			}
		}
	}()
	granted := map[uint64]bool{}
	grant := func(name string, tok uint64) {
		if granted[tok] {
			return // the same grant, answered to a retry of its owner
		}
		granted[tok] = true
		if tok <= lastToken[name] {
			t.Fatalf("seed %d: token %d for %s not above %d", seed, tok, name, lastToken[name])
		}
		lastToken[name] = tok
		held[name] = append(held[name], int64(tok))
	}
	checkWakes := func() {
		for _, w := range h.ks.TakeWakes() {
			trace = append(trace, fmt.Sprintf("  wake %d=%d", w.Waiter, w.Token))
			name, ok := waiterName[w.Waiter]
			if !ok {
				t.Fatalf("seed %d: wake for unknown waiter %d", seed, w.Waiter)
			}
			if outcome[w.Waiter] {
				if w.Token == 0 {
					continue // a late "not granted" for a waiter that heard already: ignored by its node
				}
				t.Fatalf("seed %d: waiter %d granted after it heard its outcome", seed, w.Waiter)
			}
			outcome[w.Waiter] = true
			if w.Token == 0 {
				continue
			}
			if w.Waiter <= lastGrantedWaiter[name] {
				t.Fatalf("seed %d: waiter %d of %s granted after waiter %d: not FIFO", seed, w.Waiter, name, lastGrantedWaiter[name])
			}
			lastGrantedWaiter[name] = w.Waiter
			grant(name, w.Token)
		}
	}
	checkRecords := func() {
		h.ks.items.Scan(func(it *item) bool {
			if it.kind() != KindLock {
				return true
			}
			rec, _, _ := h.ks.view(it, h.now)
			switch n := int64(len(rec.holders)); {
			case rec.mode == command.LockExclusive && n > 1:
				t.Fatalf("seed %d: %s has %d exclusive holders", seed, it.key(), n)
			case rec.mode == command.LockSemaphore && n > rec.limit:
				t.Fatalf("seed %d: %s has %d holders, limit %d", seed, it.key(), n, rec.limit)
			}
			return true
		})
	}
	h.do("NAMESPACE.SET ns/ LOCKDELAY 50 MAXWAITERS 5")
	for step := 0; step < 600; step++ {
		h.now += int64(rng.IntN(30))
		name := names[rng.IntN(len(names))]
		mode := []string{"", "SHARED", "LIMIT 2"}[rng.IntN(3)]
		var cmd string
		switch r := rng.IntN(12); {
		case r < 4:
			owner := "o" + strconv.Itoa(rng.IntN(6))
			lease := fmt.Sprintf("PX %d", 20+rng.IntN(200))
			if len(sessions) > 0 && rng.IntN(3) == 0 {
				lease = fmt.Sprintf("SESSION %d", sessions[rng.IntN(len(sessions))])
			}
			wait := ""
			if rng.IntN(2) == 0 {
				wait = fmt.Sprintf("WAIT %d", 1+rng.IntN(400))
			}
			cmd = strings.Join(strings.Fields(fmt.Sprintf("LOCK.ACQUIRE %s %s %s %s %s", name, owner, lease, wait, mode)), " ")
		case r < 7 && len(held[name]) > 0:
			cmd = fmt.Sprintf("LOCK.RELEASE %s %d", name, held[name][rng.IntN(len(held[name]))])
		case r < 8 && len(held[name]) > 0:
			cmd = fmt.Sprintf("LOCK.EXTEND %s %d %d", name, held[name][rng.IntN(len(held[name]))], 10+rng.IntN(200))
		case r < 9 && len(waiterName) > 0:
			id := uint64(rng.IntN(int(h.index)) + 1)
			if n, ok := waiterName[id]; ok {
				cmd = fmt.Sprintf("LOCK.CANCEL %s %d", n, id)
			}
		case r < 10:
			cmd = "SESSION.OPEN"
		case r < 11 && len(sessions) > 0:
			i := rng.IntN(len(sessions))
			id := sessions[i]
			sessions = append(sessions[:i], sessions[i+1:]...)
			if rng.IntN(2) == 0 {
				cmd = fmt.Sprintf("SESSION.CLOSE %d", id)
			} else {
				h.expireSession(id)
				checkWakes()
				checkRecords()
				continue
			}
		}
		if cmd == "" {
			trace = append(trace, fmt.Sprintf("%d t=%d tick", h.index+1, h.now))
			h.tick()
			checkWakes()
			checkRecords()
			continue
		}
		got := h.ks.Apply(h.index+1, command.Entry{Kind: command.KindCommand, Time: h.now, Wall: wall + h.now, Args: args(cmd)})
		h.index++
		trace = append(trace, fmt.Sprintf("%d t=%d %s -> %q", h.index, h.now, cmd, resp.Append(nil, got, 2)))
		if id, ok := QueuedWaiter(got); ok {
			if _, seen := waiterName[id]; !seen {
				waiterName[id] = name
			}
		} else if strings.HasPrefix(cmd, "LOCK.ACQUIRE") && got.Kind == resp.KindInt && uint64(got.Int) == h.index {
			grant(name, uint64(got.Int))
		} else if strings.HasPrefix(cmd, "LOCK.CANCEL") {
			id, _ := strconv.ParseUint(strings.Fields(cmd)[2], 10, 64)
			outcome[id] = true // the canceller heard it
		} else if cmd == "SESSION.OPEN" {
			sessions = append(sessions, h.index)
		}
		checkWakes()
		checkRecords()
	}
	// No starvation: time runs past every lease, wait and lock-delay; every
	// waiter has heard its outcome.
	h.now += 1000
	for _, id := range sessions {
		h.do(fmt.Sprintf("SESSION.CLOSE %d", id))
		checkWakes()
	}
	for i := 0; i < 50 && h.ks.lockTimers.Len() > 0; i++ {
		h.tick()
		checkWakes()
	}
	h.tick()
	checkWakes()
	trace = append(trace, fmt.Sprintf("end t=%d", h.now))
	for id := range waiterName {
		if !outcome[id] {
			t.Fatalf("seed %d: waiter %d (%s) never heard its outcome", seed, id, waiterName[id])
		}
	}
	if len(waiterName) < 10 {
		t.Fatalf("seed %d: only %d waiters queued: the test checks little", seed, len(waiterName))
	}
}
