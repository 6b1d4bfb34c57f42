package fsm

import (
	"bytes"
	"strings"
	"testing"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
)

// withWatchDeletes turns FeatureWatchDeletes on in h's keyspace.
func withWatchDeletes(h *harness) {
	h.index++
	s := command.Settings{Features: command.FeatureWatchDeletes}
	e := command.Entry{Kind: command.KindSettings, Time: h.now, Wall: wall + h.now, Args: command.SettingsArgs(s)}
	if v := h.ks.Apply(h.index, e); v.String() != "OK" {
		h.t.Fatalf("settings: %v", v)
	}
}

// watchVersion is what WATCH key records.
func (h *harness) watchVersion(key string) uint64 {
	v := h.ks.Read(command.Versions{Keys: [][]byte{[]byte(key)}}, h.now, wall+h.now)
	return uint64(v.Elems[0].Int)
}

// exec applies EXEC of "SET out 1" watching key at version v and returns the
// RESP2 reply.
func (h *harness) exec(key string, v uint64) string {
	h.index++
	tx := command.Tx{Watch: []command.Watched{{Key: []byte(key), Version: v}}, Cmds: [][][]byte{args("SET out 1")}}
	e := command.Entry{Kind: command.KindTx, Time: h.now, Wall: wall + h.now, Args: command.TxArgs(tx)}
	return string(resp.Append(nil, h.ks.Apply(h.index, e), 2))
}

const aborted = "*-1\r\n"

// Redis aborts EXEC when a watched key was written, whatever its state after
// the write: created and deleted again by DEL, GETDEL, an emptied hash, a
// released lock, FLUSHALL. Reads, other keys and an expiry before the WATCH
// do not abort it.
func TestWatchAbsentKeyCreatedAndDeleted(t *testing.T) {
	cases := []struct {
		name    string
		setup   []string // before WATCH
		between []string
		abort   bool
	}{
		{name: "SET then DEL", between: []string{"SET k v", "DEL k"}, abort: true},
		{name: "SET then GETDEL", between: []string{"SET k v", "GETDEL k"}, abort: true},
		{name: "HSET then HDEL of the last field", between: []string{"HSET k f v", "HDEL k f"}, abort: true},
		{name: "SET then FLUSHALL", between: []string{"SET k v", "FLUSHALL"}, abort: true},
		{name: "lock acquired and released", between: []string{"LOCK.ACQUIRE k me PX 10000", "LOCK.RELEASE k $tok"}, abort: true},
		{name: "reads only", between: []string{"GET k", "EXISTS k"}},
		{name: "another key created and deleted", between: []string{"SET other v", "DEL other"}},
		{name: "FLUSHALL of other keys", setup: []string{"SET other v"}, between: []string{"FLUSHALL"}},
		{name: "deleted before the WATCH", setup: []string{"SET k v", "DEL k"}, between: []string{"SET other v"}},
		{name: "DEL of the absent key", between: []string{"DEL k"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			withWatchDeletes(h)
			for _, c := range tc.setup {
				h.do(c)
			}
			v := h.watchVersion("k")
			last := ""
			for _, c := range tc.between {
				last = h.do(strings.ReplaceAll(c, "$tok", strings.TrimSpace(strings.TrimPrefix(last, ":"))))
			}
			if got := h.read("EXISTS k"); got != ":0\r\n" {
				t.Fatalf("after %q: EXISTS k = %q, want the key absent again", tc.between, got)
			}
			got := h.exec("k", v)
			if (got == aborted) != tc.abort {
				t.Fatalf("EXEC = %q, want aborted %v", got, tc.abort)
			}
		})
	}
}

// A present key watched, then deleted: EXEC aborts (as before tombstones);
// an expiry that happened before the WATCH does not count (Redis 7: "already
// expired key is deleted, so logically no change").
func TestWatchPresentAndExpiredKeys(t *testing.T) {
	h := newHarness(t)
	withWatchDeletes(h)
	h.do("SET k v")
	v := h.watchVersion("k")
	h.do("DEL k")
	if got := h.exec("k", v); got != aborted {
		t.Fatalf("present key deleted: EXEC = %q, want aborted", got)
	}

	h.do("SET e v PX 10")
	h.now += 20 // expired, not yet removed
	v = h.watchVersion("e")
	h.tick() // the tick removes it
	if got := h.exec("e", v); got == aborted {
		t.Fatalf("expired before WATCH, removed after: EXEC aborted")
	}

	h.do("SET x v PX 10")
	v = h.watchVersion("x")
	h.now += 20 // expires after the WATCH
	if got := h.exec("x", v); got != aborted {
		t.Fatalf("expired after WATCH: EXEC = %q, want aborted", got)
	}
}

// Before the feature is on, absent keys read version 0 (what every earlier
// lockd reads), so a group of mixed versions decides EXEC alike.
func TestWatchVersionZeroUntilFeatureOn(t *testing.T) {
	h := newHarness(t)
	h.do("SET k v")
	h.do("DEL k")
	if v := h.watchVersion("k"); v != 0 {
		t.Fatalf("absent key's version before the feature = %d, want 0", v)
	}
	withWatchDeletes(h)
	v := h.watchVersion("k")
	if v == 0 {
		t.Fatal("absent key's version after the feature = 0")
	}
	if got := h.exec("k", v); got == aborted {
		t.Fatal("nothing changed, EXEC aborted")
	}
}

// Tombstones are bounded: past maxTombstones deletions the oldest go and the
// floor rises, so an old WATCH of an absent key aborts (never runs wrongly).
func TestWatchTombstonesBounded(t *testing.T) {
	h := newHarness(t)
	withWatchDeletes(h)
	v := h.watchVersion("never")
	h.do("SET k v")
	h.do("DEL k")
	vk := h.watchVersion("k")
	for i := 0; i < maxTombstones+10; i++ {
		h.apply([][]byte{[]byte("SET"), []byte{'t', byte(i), byte(i >> 8)}, []byte("v")})
		h.apply([][]byte{[]byte("DEL"), []byte{'t', byte(i), byte(i >> 8)}})
	}
	if n := len(h.ks.tombs.at); n > maxTombstones {
		t.Fatalf("%d tombstones kept, at most %d", n, maxTombstones)
	}
	if len(h.ks.tombs.order) > 2*maxTombstones {
		t.Fatalf("%d tombstone order entries", len(h.ks.tombs.order))
	}
	if got := h.exec("never", v); got != aborted {
		t.Fatalf("watch older than the dropped tombstones: EXEC = %q, want aborted (conservative)", got)
	}
	if got := h.exec("k", vk); got != aborted {
		t.Fatalf("k's own tombstone dropped: EXEC = %q, want aborted (conservative)", got)
	}
}

// Tombstones survive a snapshot: a replica restored from it decides EXEC as
// the one that wrote it.
func TestWatchTombstonesInSnapshot(t *testing.T) {
	h := newHarness(t)
	withWatchDeletes(h)
	v := h.watchVersion("k")
	h.do("SET k v")
	h.do("DEL k")
	vOther := h.watchVersion("other")
	var buf bytes.Buffer
	if _, err := h.ks.Snapshot().WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	if buf.Bytes()[3] != 6 {
		t.Fatalf("snapshot version %d, want 6", buf.Bytes()[3])
	}
	r := &harness{t: t, ks: New(), index: h.index, now: h.now}
	if err := r.ks.Restore(&buf); err != nil {
		t.Fatal(err)
	}
	if got := r.exec("k", v); got != aborted {
		t.Fatalf("restored: EXEC after create+delete = %q, want aborted", got)
	}
	if got := r.exec("other", vOther); got == aborted {
		t.Fatal("restored: EXEC of an untouched absent key aborted")
	}
}

// Sorted set and list writes wait for FeatureCollections: before the settings turn it
// on (a member may not hold the kind) they are refused and change nothing.
func TestCollectionsWaitForTheFeature(t *testing.T) {
	h := &harness{t: t, ks: New()}
	if got := h.do("ZADD z 1 a"); got != "-"+errCollectionsOff+"\r\n" {
		t.Fatalf("ZADD before the feature: %q", got)
	}
	if got := h.do("RPUSH l a"); got != "-"+errCollectionsOff+"\r\n" {
		t.Fatalf("RPUSH before the feature: %q", got)
	}
	if got := h.read("EXISTS z l"); got != ":0\r\n" {
		t.Fatalf("EXISTS after a refused ZADD and RPUSH: %q", got)
	}
	h.index++
	s := command.Settings{Features: command.FeatureCollections}
	h.ks.Apply(h.index, command.Entry{Kind: command.KindSettings, Time: h.now, Wall: wall + h.now, Args: command.SettingsArgs(s)})
	if got := h.do("ZADD z 1 a"); got != ":1\r\n" {
		t.Fatalf("ZADD after the feature: %q", got)
	}
	if got := h.do("RPUSH l a"); got != ":1\r\n" {
		t.Fatalf("RPUSH after the feature: %q", got)
	}
}
