package fsm

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
	"github.com/lockd/lockd/shard"
)

// The releases of redsync v4 and node-redlock v5 as they send them.
const (
	redsyncRelease = `
	local val = redis.call("GET", KEYS[1])
	if val == ARGV[1] then
		return redis.call("DEL", KEYS[1])
	elseif val == false then
		return -1
	else
		return 0
	end
`
	redlockRelease = `
  local count = 0
  for i, key in ipairs(KEYS) do
    -- Only remove entries for *this* lock value.
    if redis.call("get", key) == ARGV[1] then
      redis.pcall("del", key)
      count = count + 1
    end
  end

  -- Return the number of entries removed.
  return count
`
)

// Group settings of the tests: a group of this version (released values
// kept, same-value grants on) and one run with -strict-nx.
const (
	featuresOn     = command.FeatureWatchDeletes | command.FeatureCollections | command.FeatureMigration | command.FeatureSameValueNX
	featuresStrict = featuresOn &^ command.FeatureSameValueNX
)

// withFeatures applies a settings entry turning features f on.
func withFeatures(h *harness, f uint64) {
	h.t.Helper()
	h.index++
	e := command.Entry{Kind: command.KindSettings, Time: h.now, Wall: wall + h.now, Args: command.SettingsArgs(command.Settings{Features: f})}
	if v := h.ks.Apply(h.index, e); v.String() != "OK" {
		h.t.Fatalf("settings: %v", v)
	}
}

// release is one client's release script, what it answers for a key that
// is absent (Redis's answer), and whether it is a Redlock client's (an
// owner's release again answers as the release did).
type release struct {
	name, src string
	absent    int64
	redlock   bool
}

var releases = []release{
	{"redsync v4", redsyncRelease, -1, true},
	{"node-redlock v5", redlockRelease, 0, true},
	{"compare-and-delete", recipeDel, 0, false}, // redislock's, go-redis scripts'
}

// eval runs r's script on key with owner value val.
func (h *harness) release(r release, key, val string) string {
	return h.doArgs("EVAL", r.src, "1", key, val)
}

// A Redlock client's release by the owner that just released answers as that
// release did (1) while the group's FeatureSameValueNX is on, and as Redis
// does (0, or redsync's -1) with -strict-nx, with FeatureMigration off when
// the key was deleted, after another owner's grant and release, after
// someone else's DEL, after an expiry, from a read-only script, or for a user
// who may not DEL the key.
// The single-instance clients' compare-and-delete answers as Redis does
// always.
func TestReleaseAnswersAgain(t *testing.T) {
	for _, r := range releases {
		t.Run(r.name, func(t *testing.T) {
			again := r.absent
			if r.redlock {
				again = 1
			}
			for _, mode := range []struct {
				name     string
				features uint64
				again    int64 // the second release's answer
			}{
				{"same-value on", featuresOn, again},
				{"strict", featuresStrict, r.absent},
				{"migration off", featuresOn &^ command.FeatureMigration, r.absent},
				{"no tombstones", featuresOn &^ command.FeatureWatchDeletes, r.absent},
			} {
				t.Run(mode.name, func(t *testing.T) {
					h := newHarness(t)
					withFeatures(h, mode.features)
					want := func(what, got string, n int64) {
						t.Helper()
						if got != num(n) {
							t.Fatalf("%s = %q, want %d", what, got, n)
						}
					}
					h.do("SET k owner1 NX PX 10000")
					want("the release", h.release(r, "k", "owner1"), 1)
					want("the same release again", h.release(r, "k", "owner1"), mode.again)
					want("and again, later", h.release(r, "k", "owner1"), mode.again)
					if got := h.do("EXISTS k"); got != num(0) {
						t.Fatalf("EXISTS k after the releases = %q", got)
					}
					want("another owner's release", h.release(r, "k", "owner2"), r.absent)
					want("a release of another key", h.release(r, "k2", "owner1"), r.absent)

					// Another owner's grant and release in between: its value is
					// the one the key's last deletion removed.
					h.do("SET k owner2 NX PX 10000")
					want("the first owner's release while another holds", h.release(r, "k", "owner1"), 0)
					want("the other owner's release", h.release(r, "k", "owner2"), 1)
					want("the first owner's late release", h.release(r, "k", "owner1"), r.absent)
					want("the other owner's again", h.release(r, "k", "owner2"), mode.again)

					// Someone else's DEL of the owner's value: the owner did not
					// hold it until its release, which answers as Redis's.
					h.do("SET k owner3 NX PX 10000")
					if got := h.do("DEL k"); got != num(1) {
						t.Fatalf("DEL k = %q", got)
					}
					want("the owner's release after a DEL", h.release(r, "k", "owner3"), r.absent)

					// Redis's answers where it would not repeat a release: a
					// lease that ran out (before and after its removal), a
					// read-only call, a user who may not DEL.
					h.do("SET k owner4 NX PX 100")
					want("release", h.release(r, "k", "owner4"), 1)
					h.do("SET k owner4 NX PX 100")
					h.now += 200
					want("a release after the lease ran out", h.release(r, "k", "owner4"), r.absent)
					h.tick()
					if h.ks.items.Len() != 0 {
						t.Fatalf("the expired key was not removed")
					}
					want("and after its removal", h.release(r, "k", "owner4"), r.absent)

					h.do("SET k owner5 NX PX 10000")
					want("release", h.release(r, "k", "owner5"), 1)
					want("EVALSHA_RO", h.doArgs("EVALSHA_RO", sha1hex(r.src), "1", "k", "owner5"), r.absent)
					h.do("ACL SETUSER reader on nopass ~* +get +eval +evalsha")
					want("a user who may not DEL", h.doArgs("AS", "reader", "EVAL", r.src, "1", "k", "owner5"), r.absent)
					h.do("ACL SETUSER full on nopass ~* +get +del +eval +evalsha")
					want("a user who may", h.doArgs("AS", "full", "EVAL", r.src, "1", "k", "owner5"), mode.again)
					if h.ks.items.Len() != 0 {
						t.Fatalf("a repeated release changed the keyspace: %d items", h.ks.items.Len())
					}
				})
			}
		})
	}
}

// forcedDeletions are the ways other than its owner's release that a held
// lock's key ends at once: an operator's command, given the key (and, for
// RESTORE, a DUMP payload of another string).
var forcedDeletions = []struct {
	name string
	cmd  func(key, payload string) []string
}{
	{"DEL", func(k, _ string) []string { return []string{"DEL", k} }},
	{"UNLINK", func(k, _ string) []string { return []string{"UNLINK", k} }},
	{"GETDEL", func(k, _ string) []string { return []string{"GETDEL", k} }},
	{"EXPIRE 0", func(k, _ string) []string { return []string{"EXPIRE", k, "0"} }},
	{"PEXPIREAT 1", func(k, _ string) []string { return []string{"PEXPIREAT", k, "1"} }},
	{"FLUSHALL", func(string, string) []string { return []string{"FLUSHALL"} }},
	{"RESTORE REPLACE", func(k, p string) []string { return []string{"RESTORE", k, "1", p, "REPLACE", "ABSTTL"} }},
}

// After an operator force-deletes or force-expires a held lock, its owner's
// release answers as Redis's (redsync's -1, node-redlock's count 0, the
// compare-and-delete's 0), whether or not the same owner released the same
// key and value before: only the owner's own release is remembered. The
// forced deletion itself answers as Redis's and the key stays absent.
func TestReleaseAfterForcedDeletion(t *testing.T) {
	for _, r := range releases {
		for _, f := range forcedDeletions {
			for _, before := range []bool{false, true} {
				name := r.name + "/" + f.name
				if before {
					name += "/after an earlier release"
				}
				t.Run(name, func(t *testing.T) {
					h := newHarness(t)
					withFeatures(h, featuresOn)
					want := func(what, got, w string) {
						t.Helper()
						if got != w {
							t.Fatalf("%s = %q, want %q", what, got, w)
						}
					}
					if before { // the owner's own release is remembered
						h.do("SET k owner NX PX 10000")
						want("the release", h.release(r, "k", "owner"), num(1))
						again := num(r.absent)
						if r.redlock {
							again = num(1)
						}
						want("the release again", h.release(r, "k", "owner"), again)
					}
					h.do("SET other payload")
					p := h.dumpOf("other")
					want("the grant", h.do("SET k owner NX PX 10000"), ok)
					reply := num(1)
					if f.name == "FLUSHALL" || f.name == "RESTORE REPLACE" {
						reply = ok
					} else if f.name == "GETDEL" {
						reply = bulk("owner")
					}
					want(f.name, h.doArgs(f.cmd("k", p)...), reply)
					want("EXISTS k", h.do("EXISTS k"), num(0))
					want("the owner's release", h.release(r, "k", "owner"), num(r.absent))
					want("and again", h.release(r, "k", "owner"), num(r.absent))
					if h.ks.tombs.releasingSet {
						t.Fatalf("the release mark outlived the release")
					}
				})
			}
		}
	}
}

// A node-redlock release of several keys, one of them force-deleted, counts
// the keys it deleted and, again, those only: the force-deleted key never.
func TestReleaseEachAfterForcedDeletion(t *testing.T) {
	for _, c := range []struct {
		features uint64
		want     []string // replies to the two releases
	}{
		{featuresOn, []string{num(1), num(1)}},
		{featuresStrict, []string{num(1), num(0)}},
	} {
		h := newHarness(t)
		withFeatures(h, c.features)
		h.do("MSET a v b v")
		h.do("DEL a")
		for i, w := range c.want {
			if got := h.doArgs("EVAL", redlockRelease, "2", "a", "b", "v"); got != w {
				t.Fatalf("features %b: release %d = %q, want %q", c.features, i+1, got, w)
			}
		}
	}
}

// A multi-key node-redlock release counts each key the owner's earlier
// release deleted, once however often KEYS names it, and none that this
// release deleted itself.
func TestReleaseEachAnswersAgain(t *testing.T) {
	for _, c := range []struct {
		features uint64
		want     []string // replies to the three calls
	}{
		{featuresOn, []string{num(2), num(2), num(1)}},
		{featuresStrict, []string{num(2), num(0), num(0)}},
	} {
		h := newHarness(t)
		withFeatures(h, c.features)
		h.do("MSET a v b v c w")
		got := []string{
			h.doArgs("EVAL", redlockRelease, "4", "a", "b", "c", "a", "v"),
			h.doArgs("EVAL", redlockRelease, "4", "a", "b", "c", "b", "v"),
			h.doArgs("EVAL", redlockRelease, "3", "b", "b", "b", "v"),
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Fatalf("features %b: release %d = %q, want %q", c.features, i+1, got[i], c.want[i])
			}
		}
		if h.do("GET c") != bulk("w") {
			t.Fatalf("another owner's key was deleted")
		}
	}
}

// The released values of a group are in its snapshots (version 7, once
// FeatureMigration is on) and a restored replica answers a release again as
// the group did; before FeatureMigration, the snapshot is version 6 as
// before.
func TestReleasedValuesSnapshot(t *testing.T) {
	h := newHarness(t)
	withFeatures(h, featuresOn&^command.FeatureMigration)
	h.do("SET old v")
	h.do("DEL old")
	if b := snapshotBytes(t, h.ks); b[3] != 6 {
		t.Fatalf("snapshot version %d before FeatureMigration, want 6", b[3])
	}
	withFeatures(h, featuresOn)
	for _, k := range []string{"a", "b", "c", "d"} {
		h.do("SET " + k + " v-" + k)
	}
	h.do("HSET hash f x")
	h.doArgs("EVAL", redsyncRelease, "1", "a", "v-a")
	h.doArgs("EVAL", redlockRelease, "1", "b", "v-b")
	h.do("HDEL hash f")
	h.do("SET b v-b2") // released and created again: present
	h.doArgs("EVAL", recipeDel, "1", "c", "v-c")
	h.do("SET c v-c2")                                 // c's latest deletion still removed v-c
	h.doArgs("EVAL", redsyncRelease, "1", "c", "v-c2") // now v-c2
	h.do("DEL d")                                      // not a release: no digest
	b := snapshotBytes(t, h.ks)
	if b[3] != 7 {
		t.Fatalf("snapshot version %d, want 7", b[3])
	}
	r := New()
	if err := r.Restore(bytes.NewReader(b)); err != nil {
		t.Fatal(err)
	}
	if again := snapshotBytes(t, r); !bytes.Equal(again, b) {
		t.Fatalf("a restored keyspace's snapshot differs from the one it was restored from")
	}
	if len(r.tombs.released) != 3 || len(r.tombs.at) != 6 {
		t.Fatalf("restored %d released values, %d tombstones; want 3 (a, b, c), 6", len(r.tombs.released), len(r.tombs.at))
	}
	g := &harness{t: t, ks: r, index: h.index, now: h.now}
	for _, c := range []struct{ key, val, want string }{
		{"a", "v-a", num(1)},
		{"a", "v-b", num(-1)},
		{"b", "v-b", num(0)}, // present again, another owner's
		{"c", "v-c2", num(1)},
		{"c", "v-c", num(-1)},
		{"d", "v-d", num(-1)}, // deleted by a DEL
		{"old", "v", num(-1)}, // deleted before FeatureMigration
		{"hash", "x", num(-1)},
	} {
		if got := g.doArgs("EVAL", redsyncRelease, "1", c.key, c.val); got != c.want {
			t.Fatalf("restored: release %s %s = %q, want %q", c.key, c.val, got, c.want)
		}
	}

	// A corrupt released section is refused: a count past its entries, a
	// digest of a key without a tombstone, one key twice.
	section := writeReleased(nil, h.ks.tombs)
	repl := appendReplication(nil, h.ks.repl) // what follows them (replica.go)
	if !bytes.HasSuffix(b, append(append([]byte(nil), section...), repl...)) || section[0] != 3 {
		t.Fatalf("the snapshot does not end with the released values and the replication state")
	}
	prefix, entries := b[:len(b)-len(section)-len(repl)], section[1:]
	_, n := binary.Uvarint(entries)
	first := entries[:n+8] // the first hash and its digest
	for name, tail := range map[string][]byte{
		"count past its entries": append([]byte{4}, entries...),
		"no tombstone":           append(append([]byte{1}, binary.AppendUvarint(nil, 12345)...), make([]byte, 8)...),
		"one key twice":          append(append([]byte{2}, first...), first...),
	} {
		bad := append(append(append([]byte(nil), prefix...), tail...), repl...)
		if err := New().Restore(bytes.NewReader(bad)); err == nil {
			t.Fatalf("%s: a corrupt released section restored", name)
		}
	}
}

// A key that left the group with its slot keeps its tombstone but no
// released value: the release of a key whose slot came back answers as
// Redis does.
func TestReleasedValueNotKeptBySlotMove(t *testing.T) {
	key := "{moved}lock"
	slot := shard.Slot([]byte(key))
	h := newHarness(t)
	withFeatures(h, featuresOn)
	h.do("SET " + key + " owner NX PX 10000")
	h.index++
	if v := h.ks.Apply(h.index, command.Entry{Kind: command.KindMigrate, Time: h.now, Wall: wall + h.now, Args: command.MigrateArgs(command.MigrateFreeze, slot, slot)}); v.Kind != resp.KindBulk {
		t.Fatalf("freeze: %v", v)
	}
	h.index++
	if v := h.ks.Apply(h.index, command.Entry{Kind: command.KindMigrate, Time: h.now, Wall: wall + h.now, Args: command.MigrateArgs(command.MigrateDrop, slot, slot)}); v.Int != 1 {
		t.Fatalf("drop: %v", v)
	}
	// The slot comes back, empty.
	empty := New()
	empty.index = 1
	blob := empty.Apply(2, command.Entry{Kind: command.KindMigrate, Wall: wall, Args: command.MigrateArgs(command.MigrateFreeze, slot, slot)})
	h.index++
	if v := h.ks.Apply(h.index, command.Entry{Kind: command.KindImport, Time: h.now, Wall: wall + h.now, Args: command.ImportArgs(blob.Str)}); v.String() != "OK" {
		t.Fatalf("import: %v", v)
	}
	if got := h.doArgs("EVAL", redsyncRelease, "1", key, "owner"); got != num(-1) {
		t.Fatalf("release of a key that left with its slot = %q, want -1", got)
	}
}

// The new recipes run natively give what the interpreter gives, replies and
// effects alike, with Redis's answers (-strict-nx): the interpreter runs the
// same scripts with a block comment added, which keeps them from being
// recognised.
func TestReleaseRecipesMatchTheInterpreter(t *testing.T) {
	native, interp := newHarness(t), newHarness(t)
	withFeatures(native, featuresStrict)
	withFeatures(interp, featuresStrict)
	eval := func(script string, rest ...string) []string { return append([]string{"EVAL", script}, rest...) }
	calls := [][]string{
		{"SET", "k", "v"},
		eval(redsyncRelease, "1", "k", "w"),
		eval(redsyncRelease, "1", "k", "v"),
		eval(redsyncRelease, "1", "k", "v"),
		eval(redsyncRelease, "1", "k"), // ARGV[1] missing
		{"SET", "k", "v"},
		eval(redsyncRelease, "1", "k"),
		{"HSET", "h", "a", "1"},
		eval(redsyncRelease, "1", "h", "v"), // WRONGTYPE inside the script
		{"SET", "k", "v"},
		{"EVALSHA_RO", sha1hex(redsyncRelease), "1", "k", "v"}, // may not DEL
		{"EXISTS", "k"},
		{"MSET", "a", "v", "b", "v", "c", "w"},
		eval(redlockRelease, "5", "a", "b", "c", "a", "missing", "v"),
		{"MGET", "a", "b", "c"},
		eval(redlockRelease, "0", "v"),
		eval(redlockRelease, "2", "a", "b"), // ARGV[1] missing
		{"MSET", "a", "v", "b", "v"},
		eval(redlockRelease, "3", "a", "h", "b", "v"), // WRONGTYPE at the second key: the first is deleted
		{"MGET", "a", "b"},
		{"SET", "a", "v"},
		{"EVALSHA_RO", sha1hex(redlockRelease), "2", "a", "b", "v"}, // the DEL fails inside pcall: counted
		{"MGET", "a", "b"},
		{"ACL", "SETUSER", "reader", "on", "nopass", "~*", "+get"},
		append([]string{"AS", "reader"}, eval(redlockRelease, "2", "a", "b", "v")...),
		append([]string{"AS", "reader"}, eval(redsyncRelease, "1", "a", "v")...),
		{"ACL", "SETUSER", "nokeys", "on", "nopass", "~x*", "+get", "+del"},
		append([]string{"AS", "nokeys"}, eval(redlockRelease, "2", "x1", "a", "v")...),
		{"MGET", "a", "b"},
	}
	comment := map[string]string{}
	for _, src := range []string{redsyncRelease, redlockRelease} {
		comment[src] = src + " --[[ interpreted ]]"
		comment[sha1hex(src)] = sha1hex(src + " --[[ interpreted ]]")
	}
	for i, c := range calls {
		a := native.doArgs(c...)
		other := append([]string(nil), c...)
		for j, s := range other {
			if o, ok := comment[s]; ok {
				other[j] = o
			}
		}
		b := interp.doArgs(other...)
		for _, src := range []string{redsyncRelease, redlockRelease} { // errors name the script
			b = strings.ReplaceAll(b, sha1hex(src+" --[[ interpreted ]]"), sha1hex(src))
		}
		if a != b {
			t.Fatalf("call %d %q: native %q, interpreter %q", i, strings.Join(c, " "), a, b)
		}
	}
	if r := native.ks.scripts.Recipe(sha1hex(redlockRelease)); r == 0 {
		t.Fatalf("node-redlock's release is not recognised")
	}
}

// snapshotBytes writes k's snapshot.
func snapshotBytes(t *testing.T, k *Keyspace) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := k.Snapshot().WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
