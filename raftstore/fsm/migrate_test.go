package fsm

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
	"github.com/lockd/lockd/shard"
)

// group is one Raft group's keyspace, fed entries at its own Raft indexes and
// log time (no Raft: the test is the log).
type group struct {
	t     *testing.T
	name  string
	ks    *Keyspace
	index uint64
	now   int64
}

func newGroup(t *testing.T, name string) *group { return &group{t: t, name: name, ks: New()} }

// entry applies one entry of kind at the group's next index and log time.
func (g *group) entry(kind command.Kind, a [][]byte) resp.Value {
	g.index++
	return g.ks.Apply(g.index, command.Entry{Kind: kind, Time: g.now, Wall: wall + g.now, Args: a})
}

// v applies a command entry and returns its reply.
func (g *group) v(cmd string) resp.Value { return g.entry(command.KindCommand, args(cmd)) }

// do applies a command entry and renders the reply as RESP2.
func (g *group) do(cmd string) string { return string(resp.Append(nil, g.v(cmd), 2)) }

// read serves a read outside the log the way raftstore does: CheckKeys first.
func (g *group) read(cmd string) string {
	a := args(cmd)
	if v, stop := g.ks.CheckKeys(command.SlotKeys(a)); stop {
		return string(resp.Append(nil, v, 2))
	}
	op, spec, err := command.Parse(a)
	if err != nil || spec == nil || spec.Writes() {
		g.t.Fatalf("%s: read %q: not a read (%v)", g.name, cmd, err)
	}
	return string(resp.Append(nil, g.ks.Read(op, g.now, wall+g.now), 2))
}

func (g *group) tick() { g.entry(command.KindTick, nil) }

// noops advances the Raft index by n entries that change nothing.
func (g *group) noops(n int) {
	for range n {
		g.entry(command.KindNoop, nil)
	}
}

func (g *group) migrate(action string, from, to uint16) resp.Value {
	return g.entry(command.KindMigrate, command.MigrateArgs(action, from, to))
}

// want fails unless cmd, applied as an entry, answers want (RESP2).
func (g *group) want(cmd, want string) {
	g.t.Helper()
	if got := g.do(cmd); got != want {
		g.t.Fatalf("%s: %q = %q, want %q", g.name, cmd, got, want)
	}
}

// wantRead is want for a read served outside the log.
func (g *group) wantRead(cmd, want string) {
	g.t.Helper()
	if got := g.read(cmd); got != want {
		g.t.Fatalf("%s: read %q = %q, want %q", g.name, cmd, got, want)
	}
}

func (g *group) token(cmd string) uint64 {
	g.t.Helper()
	v := g.v(cmd)
	if v.Kind != resp.KindInt || v.Int <= 0 {
		g.t.Fatalf("%s: %q = %v, want a token", g.name, cmd, v)
	}
	return uint64(v.Int)
}

// session opens a session and returns its id.
func (g *group) session(cmd string) uint64 {
	g.t.Helper()
	v := g.v(cmd)
	if v.Kind != resp.KindMap {
		g.t.Fatalf("%s: %q = %v", g.name, cmd, v)
	}
	return uint64(mapField(g.t, v, "session_id").Int)
}

// mapField returns the value under name in a RESP map.
func mapField(t *testing.T, v resp.Value, name string) resp.Value {
	t.Helper()
	for i := 0; i+1 < len(v.Elems); i += 2 {
		if string(v.Elems[i].Str) == name {
			return v.Elems[i+1]
		}
	}
	t.Fatalf("no %q in %v", name, v)
	return resp.Value{}
}

// holderOf returns LOCK.INFO's only holder of name, read in g.
func (g *group) holderOf(name string) resp.Value {
	g.t.Helper()
	op, _, err := command.Parse(args("LOCK.INFO " + name))
	if err != nil {
		g.t.Fatal(err)
	}
	info := g.ks.Read(op, g.now, wall+g.now)
	hs := mapField(g.t, info, "holders")
	if len(hs.Elems) != 1 {
		g.t.Fatalf("%s: LOCK.INFO %s: holders %v, want one", g.name, name, hs)
	}
	return hs.Elems[0]
}

func tryAgain(slot uint16) string {
	return "-TRYAGAIN slot " + strconv.Itoa(int(slot)) + " is moving to another group\r\n"
}
func moved(slot uint16) string { return "-MOVED " + strconv.Itoa(int(slot)) + "\r\n" }
func integer(n uint64) string  { return ":" + strconv.FormatUint(n, 10) + "\r\n" }

// TestMoveSlot moves one slot holding a lease lock, a session lock, a fenced
// string and a hash from g to h, and back.
func TestMoveSlot(t *testing.T) {
	slot := shard.Slot([]byte("{acct}"))
	if shard.Slot([]byte("other")) == slot {
		t.Fatal("test keys share a slot")
	}
	g, h := newGroup(t, "g"), newGroup(t, "h")
	g.noops(1000) // g's tokens are far above h's Raft indexes
	sess := g.session("SESSION.OPEN TTL 10000")
	g.v("SESSION.OPEN TTL 10000") // another session, holding nothing
	lockTok := g.token("LOCK.ACQUIRE {acct}lock owner1 PX 8000")
	slockTok := g.token("LOCK.ACQUIRE {acct}slock owner2 SESSION " + strconv.FormatUint(sess, 10) + " REENTRANT")
	g.token("LOCK.ACQUIRE {acct}slock owner2 SESSION " + strconv.FormatUint(sess, 10) + " REENTRANT")
	fenceTok := g.token("SET {acct}fence v1 PX 6000 FENCE")
	g.want("HSET {acct}hash f1 a f2 b", ":2\r\n")
	g.want("SET other x", ok)
	queued := g.v("LOCK.ACQUIRE {acct}lock waiter WAIT 5000")
	waiter, isQueued := QueuedWaiter(queued)
	if !isQueued {
		t.Fatalf("blocking acquire answered %v", queued)
	}
	late, _ := QueuedWaiter(g.v("LOCK.ACQUIRE {acct}lock late WAIT 500")) // its wait ends before the drop
	g.ks.TakeWakes()
	g.now += 1000

	// Freeze: the slot's keys answer TRYAGAIN, in every kind of entry and in
	// reads; other keys are untouched.
	fv := g.migrate(command.MigrateFreeze, slot, slot)
	if fv.Kind != resp.KindBulk {
		t.Fatalf("freeze answered %v", fv)
	}
	blob := append([]byte(nil), fv.Str...)
	freezeIndex := g.index
	g.want("SET {acct}fence v2", tryAgain(slot))
	g.want("LOCK.RELEASE {acct}lock "+strconv.FormatUint(lockTok, 10), tryAgain(slot))
	g.want("HSET {acct}hash f3 c", tryAgain(slot))
	g.want("MSET other y {acct}fence z", tryAgain(slot))
	g.want("EVAL return 1 {acct}fence", tryAgain(slot))
	g.wantRead("GET {acct}fence", tryAgain(slot))
	g.wantRead("LOCK.INFO {acct}lock", tryAgain(slot))
	if got := string(resp.Append(nil, g.entry(command.KindTx, command.TxArgs(command.Tx{Watch: []command.Watched{{Key: []byte("{acct}hash"), Version: 1}}, Cmds: [][][]byte{args("SET other z")}})), 2)); got != tryAgain(slot) {
		t.Fatalf("tx watching a frozen key: %q", got)
	}
	if got := string(resp.Append(nil, g.entry(command.KindScriptAs, command.ScriptAsArgs("u", args("EVAL return 1 {acct}hash"))), 2)); got != tryAgain(slot) {
		t.Fatalf("script as user on a frozen key: %q", got)
	}
	g.wantRead("GET other", "$1\r\nx\r\n")
	g.want("SET other y", ok)
	g.want("NAMESPACE.SET {acct} LOCKDELAY 5", ok) // a prefix, not a key of the slot
	if got := g.read("NAMESPACE.GET {acct}"); !strings.Contains(got, "lockdelay\r\n:5\r\n") {
		t.Fatalf("NAMESPACE.GET of a prefix in a frozen slot: %q", got)
	}
	g.want("NAMESPACE.DEL {acct}", ":1\r\n")
	g.want("MGET other", "*1\r\n$1\r\ny\r\n")
	g.wantRead("GET {acct}fence", tryAgain(slot)) // still frozen after other writes

	// Import into h, whose Raft index is far below g's tokens and whose log
	// time is unrelated to g's.
	h.noops(5)
	h.now = 90_000
	if got := h.entry(command.KindImport, command.ImportArgs(blob)); got.String() != "OK" {
		t.Fatalf("import: %v", got)
	}
	if h.ks.Index() != h.index {
		t.Fatalf("h.Index() = %d, want the Raft index %d", h.ks.Index(), h.index)
	}
	if logical := h.ks.Index() + h.ks.TokenBase(); logical <= uint64(freezeIndex)+g.ks.TokenBase() {
		t.Fatalf("import's logical index %d is not above the freeze's %d", logical, freezeIndex)
	}
	holder := h.holderOf("{acct}lock")
	if got := mapField(t, holder, "token").Int; uint64(got) != lockTok {
		t.Fatalf("moved holder's token = %d, want %d", got, lockTok)
	}
	if got := string(mapField(t, holder, "owner").Str); got != "owner1" {
		t.Fatalf("moved holder's owner = %q", got)
	}
	if got := mapField(t, holder, "ttl_ms").Int; got != 7000 {
		t.Fatalf("moved lease has %d ms left, want 7000", got)
	}
	if got := mapField(t, holder, "held_for_ms").Int; got != 1000 {
		t.Fatalf("moved holder held for %d ms, want 1000", got)
	}
	sh := h.holderOf("{acct}slock")
	if mapField(t, sh, "session").Int != int64(sess) || mapField(t, sh, "count").Int != 2 || mapField(t, sh, "ttl_ms").Int != -1 {
		t.Fatalf("moved session holder: %v", sh)
	}
	h.wantRead("GET {acct}fence", "$2\r\nv1\r\n")
	h.wantRead("PTTL {acct}fence", ":5000\r\n")
	h.wantRead("FENCE {acct}fence", integer(fenceTok))
	h.wantRead("HGETALL {acct}hash", "*4\r\n$2\r\nf1\r\n$1\r\na\r\n$2\r\nf2\r\n$1\r\nb\r\n")
	h.wantRead("EXISTS other", ":0\r\n")
	if ttl, open := h.ks.SessionTTL(sess); !open || ttl != 10000 {
		t.Fatalf("session %d in h: %d %v", sess, ttl, open)
	}
	if _, open := h.ks.SessionTTL(sess + 1); open {
		t.Fatal("a session holding nothing in the slot was imported")
	}
	// The session holds its lock in h: idempotent re-acquire, and a close
	// releases it.
	h.want("LOCK.ACQUIRE {acct}slock owner2 SESSION "+strconv.FormatUint(sess, 10), integer(slockTok))

	// Log time passes in h: the lease and the TTL run out there.
	h.now += 4000
	h.wantRead("PTTL {acct}fence", ":1000\r\n")
	if got := mapField(t, h.holderOf("{acct}lock"), "ttl_ms").Int; got != 3000 {
		t.Fatalf("lease left after 4 s in h: %d", got)
	}
	// Released and acquired again in h: a token above every token of g.
	h.want("LOCK.RELEASE {acct}lock "+strconv.FormatUint(lockTok, 10), ":1\r\n")
	next := h.token("LOCK.ACQUIRE {acct}lock owner3 PX 1000")
	if next <= uint64(freezeIndex) || next <= lockTok || h.index >= lockTok {
		t.Fatalf("new grant in h: token %d, g's freeze %d, old token %d, h's Raft index %d", next, freezeIndex, lockTok, h.index)
	}
	if tok := h.token("SET {acct}fence v3 FENCE"); tok <= fenceTok || tok <= next {
		t.Fatalf("new fenced write in h: token %d after %d and %d", tok, fenceTok, next)
	}
	if s := h.session("SESSION.OPEN"); s <= uint64(freezeIndex) {
		t.Fatalf("a session opened in h after the import has id %d, not above %d", s, freezeIndex)
	}

	// Drop in g: items gone, the waiter still waiting is woken Moved, the
	// one whose wait ended is not, the session forgets the lock, and the
	// slot answers MOVED.
	if got := g.migrate(command.MigrateDrop, slot, slot); got.Kind != resp.KindInt || got.Int != 4 {
		t.Fatalf("drop answered %v, want 4 keys", got)
	}
	wakes := g.ks.TakeWakes()
	if len(wakes) != 2 || wakes[1] != (Wake{Waiter: waiter, Moved: true}) || wakes[0] != (Wake{Waiter: late}) {
		t.Fatalf("wakes at drop: %+v, want waiter %d moved and %d not granted", wakes, waiter, late)
	}
	g.want("GET {acct}fence", moved(slot))
	g.want("LOCK.ACQUIRE {acct}lock x PX 10", moved(slot))
	g.wantRead("EXISTS {acct}hash", moved(slot))
	g.want("MSET other z {acct}fence z", moved(slot))
	g.wantRead("GET other", "$1\r\ny\r\n")
	g.want("DBSIZE", ":1\r\n")
	if s := g.ks.sessions[sess]; s == nil || len(s.locks) != 0 {
		t.Fatalf("session %d in g after the drop: %+v", sess, s)
	}
	if len(g.ks.Frozen()) != 0 || fmt.Sprint(g.ks.Gone()) != fmt.Sprint([]SlotRange{{slot, slot}}) {
		t.Fatalf("after drop: frozen %v, gone %v", g.ks.Frozen(), g.ks.Gone())
	}

	// And back: h freezes, g imports, g's tokens continue above h's.
	hv := h.migrate(command.MigrateFreeze, slot, slot)
	hMax := h.index + h.ks.TokenBase()
	if got := g.entry(command.KindImport, command.ImportArgs(hv.Str)); got.String() != "OK" {
		t.Fatalf("import back: %v", got)
	}
	if len(g.ks.Gone()) != 0 {
		t.Fatalf("slot still gone in g after importing it: %v", g.ks.Gone())
	}
	g.want("LOCK.RELEASE {acct}lock "+strconv.FormatUint(next, 10), ":1\r\n")
	if tok := g.token("LOCK.ACQUIRE {acct}lock owner4 PX 1000"); tok <= hMax {
		t.Fatalf("grant in g after the move back: token %d, h's max %d", tok, hMax)
	}
}

// TestFrozenSlotIsInert: while a slot is frozen nothing changes its items:
// no expiry, no grant to a waiter, no release by an ending session, and no
// tick is due for them. A thaw ends the holds of sessions that ended
// meanwhile and grants the waiters.
func TestFrozenSlotIsInert(t *testing.T) {
	slot := shard.Slot([]byte("t"))
	g := newGroup(t, "g")
	sess := g.session("SESSION.OPEN TTL 10000")
	g.token("LOCK.ACQUIRE {t}a o1 PX 100")
	_, queued := QueuedWaiter(g.v("LOCK.ACQUIRE {t}a o2 WAIT 10000"))
	g.token("LOCK.ACQUIRE {t}b o3 SESSION " + strconv.FormatUint(sess, 10))
	_, queuedB := QueuedWaiter(g.v("LOCK.ACQUIRE {t}b o4 WAIT 10000"))
	if !queued || !queuedB {
		t.Fatal("acquires were not queued")
	}
	g.want("SET {t}s v PX 100", ok)
	g.want("SET free v PX 100", ok)
	g.ks.TakeWakes()
	g.migrate(command.MigrateFreeze, slot, slot)

	g.now += 500
	if d, ok := g.ks.NextDeadline(); !ok || d != 100 {
		t.Fatalf("NextDeadline = %d %v, want only the unfrozen key's 100", d, ok)
	}
	g.tick()
	g.entry(command.KindSessionExpire, command.SessionExpireArgs(sess))
	if d, ok := g.ks.NextDeadline(); ok || g.ks.GrantReady() {
		t.Fatalf("after the tick: NextDeadline %d %v, GrantReady %v; want nothing due", d, ok, g.ks.GrantReady())
	}
	if w := g.ks.TakeWakes(); len(w) != 0 {
		t.Fatalf("a frozen lock changed hands: %+v", w)
	}
	if g.ks.items.Len() != 3 {
		t.Fatalf("%d items left, want the 3 frozen ones", g.ks.items.Len())
	}

	// Thaw: both locks go to their waiters (one lease ran out, one session
	// ended), and the expired string is due again.
	if got := g.migrate(command.MigrateThaw, slot, slot); got.String() != "OK" {
		t.Fatalf("thaw: %v", got)
	}
	g.tick()
	g.tick()
	granted := 0
	for _, w := range g.ks.TakeWakes() {
		if w.Token != 0 {
			granted++
		}
	}
	if granted != 2 {
		t.Fatalf("%d waiters granted after the thaw, want 2", granted)
	}
	g.wantRead("EXISTS {t}s", ":0\r\n")
	g.want("SET {t}s w", ok)
}

func TestSessionAttach(t *testing.T) {
	g := newGroup(t, "g")
	attach := func(id uint64, ttl int64) string {
		return string(resp.Append(nil, g.entry(command.KindSessionAttach, command.SessionAttachArgs(id, ttl)), 2))
	}
	g.want("LOCK.ACQUIRE l o SESSION 700", "-"+string(command.ErrNoSession)+"\r\n")
	if got := attach(700, 12000); got != ":12000\r\n" {
		t.Fatalf("attach = %q", got)
	}
	if got := attach(700, 5000); got != ":12000\r\n" {
		t.Fatalf("second attach = %q, want the TTL already there", got)
	}
	g.wantRead("SESSION.KEEPALIVE 700", ":12000\r\n")
	tok := g.token("LOCK.ACQUIRE l o SESSION 700")
	g.want("LOCK.ACQUIRE l o SESSION 700", integer(tok))
	g.want("SESSION.CLOSE 700", ":1\r\n")
	g.wantRead("LOCK.INFO l", nilb)
	if got := string(resp.Append(nil, g.entry(command.KindSessionAttach, [][]byte{[]byte("0"), []byte("5")}), 2)); !strings.HasPrefix(got, "-ERR") {
		t.Fatalf("attach of session 0 = %q, want an error", got)
	}
}

func TestShardMapEntry(t *testing.T) {
	g := newGroup(t, "g")
	if g.ks.ShardMap() != nil {
		t.Fatal("a new keyspace has a shard map")
	}
	m1, err := shard.NewMap(4)
	if err != nil {
		t.Fatal(err)
	}
	m2, _ := m1.Assign(0, 10, 3)
	m3, _ := m2.Assign(11, 20, 2)
	set := func(b []byte) string {
		return string(resp.Append(nil, g.entry(command.KindShardMap, command.ShardMapArgs(b)), 2))
	}
	stored := func() uint64 {
		m, err := shard.Decode(g.ks.ShardMap())
		if err != nil {
			t.Fatalf("stored map: %v", err)
		}
		return m.Version
	}
	if set(m2.Encode()) != ok || stored() != 2 {
		t.Fatal("first map not stored")
	}
	if set(m1.Encode()) != ok || stored() != 2 {
		t.Fatal("an older map replaced a newer one")
	}
	if set(m2.Encode()) != ok || stored() != 2 {
		t.Fatal("the same version twice")
	}
	if set(m3.Encode()) != ok || stored() != 3 || !bytes.Equal(g.ks.ShardMap(), m3.Encode()) {
		t.Fatal("a newer map was not stored")
	}
	if got := set([]byte("garbage")); !strings.HasPrefix(got, "-ERR bad shard map") || stored() != 3 {
		t.Fatalf("bad map: %q, stored version %d", got, stored())
	}
	g.ks.ShardMap()[0] = 99 // a copy
	if stored() != 3 {
		t.Fatal("ShardMap returned the keyspace's own bytes")
	}
}

// TestImportNeverLowersBase: an export from a group whose tokens are below
// this one's leaves the token base alone; tokens keep growing.
func TestImportNeverLowersBase(t *testing.T) {
	g, h := newGroup(t, "g"), newGroup(t, "h")
	h.noops(500)
	before := h.token("SET {x}k v FENCE")
	g.want("SET {x}k2 v", ok)
	blob := g.migrate(command.MigrateFreeze, shard.Slot([]byte("x")), shard.Slot([]byte("x"))).Str
	h.entry(command.KindImport, command.ImportArgs(blob))
	if h.ks.TokenBase() != 0 {
		t.Fatalf("base = %d after importing lower tokens", h.ks.TokenBase())
	}
	if tok := h.token("SET {x}k2 w FENCE"); tok <= before {
		t.Fatalf("token %d after %d", tok, before)
	}
	if got := h.entry(command.KindImport, command.ImportArgs([]byte("LKX\x01junk"))); !strings.HasPrefix(got.String(), "ERR bad import") {
		t.Fatalf("bad blob: %v", got)
	}
}

func TestMigrateRejectsBadEntries(t *testing.T) {
	g := newGroup(t, "g")
	g.want("SET k v", ok)
	for _, a := range [][]byte{
		{'x'}, []byte("freeze"),
	} {
		if got := g.entry(command.KindMigrate, [][]byte{a}); !got.IsError() {
			t.Fatalf("migrate %q = %v", a, got)
		}
	}
	if got := g.entry(command.KindMigrate, command.MigrateArgs("freeze", 9, 3)); !got.IsError() {
		t.Fatalf("an empty range froze: %v", got)
	}
	if len(g.ks.Frozen()) != 0 {
		t.Fatal("a rejected entry froze slots")
	}
}

func TestCheckKeysNeedsNoRanges(t *testing.T) {
	ks := New()
	if _, stop := ks.CheckKeys([][]byte{[]byte("a"), []byte("b")}); stop {
		t.Fatal("CheckKeys stopped a key with nothing frozen or gone")
	}
	allocs := testing.AllocsPerRun(100, func() { ks.CheckKeys([][]byte{[]byte("a")}) })
	if allocs != 0 {
		t.Fatalf("CheckKeys allocates %v times on the fast path", allocs)
	}
}

func TestSlotRanges(t *testing.T) {
	var rs slotRanges
	rs = rs.add(10, 20).add(30, 40).add(21, 29).add(100, 100).add(0, 5)
	if got := fmt.Sprint(rs); got != "[{0 5} {10 40} {100 100}]" {
		t.Fatalf("add: %s", got)
	}
	for s, want := range map[uint16]bool{0: true, 5: true, 6: false, 9: false, 10: true, 25: true, 40: true, 41: false, 100: true, 16383: false} {
		if rs.contains(s) != want {
			t.Errorf("contains(%d) = %v", s, !want)
		}
	}
	rs = rs.remove(15, 35).remove(0, 0).remove(100, 16383)
	if got := fmt.Sprint(rs); got != "[{1 5} {10 14} {36 40}]" {
		t.Fatalf("remove: %s", got)
	}
	if got := fmt.Sprint(rs.add(0, 16383)); got != "[{0 16383}]" {
		t.Fatalf("add all: %s", got)
	}
}

// TestMigrateSnapshot: the token base, frozen and gone ranges and the shard
// map survive a snapshot, and a restored keyspace writes the same bytes.
func TestMigrateSnapshot(t *testing.T) {
	g, h := newGroup(t, "g"), newGroup(t, "h")
	g.noops(300)
	g.want("SET {a}k v", ok)
	blob := g.migrate(command.MigrateFreeze, shard.Slot([]byte("a")), shard.Slot([]byte("a"))).Str
	h.entry(command.KindImport, command.ImportArgs(blob))
	h.migrate(command.MigrateFreeze, 100, 200)
	h.migrate(command.MigrateDrop, 300, 400)
	m, _ := shard.NewMap(3)
	h.entry(command.KindShardMap, command.ShardMapArgs(m.Encode()))

	var buf bytes.Buffer
	if _, err := h.ks.Snapshot().WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	if buf.Bytes()[3] != 4 {
		t.Fatalf("snapshot version %d, want 4", buf.Bytes()[3])
	}
	r := New()
	if err := r.Restore(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	if r.TokenBase() != h.ks.TokenBase() || r.TokenBase() == 0 || r.Index() != h.index {
		t.Fatalf("restored base %d index %d, want %d %d", r.TokenBase(), r.Index(), h.ks.TokenBase(), h.index)
	}
	if fmt.Sprint(r.Frozen(), r.Gone()) != "[{100 200}] [{300 400}]" || !bytes.Equal(r.ShardMap(), m.Encode()) {
		t.Fatalf("restored frozen %v gone %v map %x", r.Frozen(), r.Gone(), r.ShardMap())
	}
	var again bytes.Buffer
	r.Snapshot().WriteTo(&again)
	if !bytes.Equal(buf.Bytes(), again.Bytes()) {
		t.Fatal("a restored keyspace writes a different snapshot")
	}
	// Tokens continue from the base after a restore.
	rh := &group{t: t, name: "restored", ks: r, index: h.index, now: h.now}
	if tok := rh.token("SET {a}k w FENCE"); tok != h.index+1+h.ks.TokenBase() {
		t.Fatalf("token after restore %d, want %d", tok, h.index+1+h.ks.TokenBase())
	}
	if got, stop := r.CheckKeys([][]byte{keyInSlot(t, 150)}); !stop || !strings.HasPrefix(got.String(), "TRYAGAIN") {
		t.Fatalf("frozen slot after restore: %v", got)
	}
	if got, stop := r.CheckKeys([][]byte{keyInSlot(t, 350)}); !stop || got.String() != "MOVED 350" {
		t.Fatalf("gone slot after restore: %v", got)
	}
}

// keyInSlot finds a key of the given slot.
func keyInSlot(t *testing.T, slot uint16) []byte {
	for i := 0; i < 1_000_000; i++ {
		k := []byte("k" + strconv.Itoa(i))
		if shard.Slot(k) == slot {
			return k
		}
	}
	t.Fatalf("no key in slot %d", slot)
	return nil
}

// goldenV3 is a version 3 snapshot written before version 4 existed: a
// session (1), a string with a TTL, a fenced string (token 3), a hash, a lock
// with a holder (o1, token 5) and a waiter (6), a session's lock, a
// namespace, a script and an ACL user, at log time 90.
const goldenV3 = "4c4b5303b4010a0503026c6b010201026f3100050250a08d01000106026f3200b0ea0101020064a43f000005a43fa08d01050601037374720176a44e02020105706c61696e01780003030201680201610131016201320004040302736c010201026f3301070278feffffffffffffffff01000000000700feffffffffffffffff010707010672657475726e0101a09c01000102736c01036e732f000001000a000001017503000102612a0001042b676574"

func TestRestoreVersion3(t *testing.T) {
	b, err := hex.DecodeString(goldenV3)
	if err != nil {
		t.Fatal(err)
	}
	ks := New()
	if err := ks.Restore(bytes.NewReader(b)); err != nil {
		t.Fatalf("version 3 snapshot: %v", err)
	}
	g := &group{t: t, name: "v3", ks: ks, index: ks.Index(), now: ks.Now()}
	if g.index != 10 || ks.TokenBase() != 0 || ks.SlotsMarked() || ks.ShardMap() != nil {
		t.Fatalf("index %d base %d frozen %v gone %v", g.index, ks.TokenBase(), ks.Frozen(), ks.Gone())
	}
	g.wantRead("GET plain", "$1\r\nx\r\n")
	g.wantRead("FENCE plain", ":3\r\n")
	g.wantRead("HGET h b", "$1\r\n2\r\n")
	if tok := mapField(t, g.holderOf("lk"), "token").Int; tok != 5 {
		t.Fatalf("lk holder token %d", tok)
	}
	if _, open := ks.SessionTTL(1); !open {
		t.Fatal("session 1 not restored")
	}
	var buf bytes.Buffer
	ks.Snapshot().WriteTo(&buf)
	if buf.Bytes()[3] != 4 { // no settings or session owners: version 4 (snapshot.go)
		t.Fatalf("rewritten as version %d", buf.Bytes()[3])
	}
	if err := New().Restore(&buf); err != nil {
		t.Fatal(err)
	}
}

func TestExportCodec(t *testing.T) {
	ex := &Export{From: 3, To: 9, MaxToken: 500,
		Sessions: []SessionInfo{{ID: 7, TTL: 10000}},
		Items: []ExportItem{
			{Key: []byte("s"), Kind: KindString, Token: 10, TTL: 99, Value: []byte("v")},
			{Key: []byte("h"), Kind: KindHash, Token: 11, Fields: []HashField{{[]byte("a"), []byte("1")}}},
			{Key: []byte("l"), Kind: KindLock, Token: 12, Lock: &ExportLock{Mode: command.LockSemaphore, Limit: 2, Holders: []ExportHolder{
				{Owner: []byte("o"), Token: 12, Count: 1, HeldFor: 5, TTL: 50},
				{Owner: []byte("p"), Session: 7, Token: 12, Count: 3},
			}}},
			{Key: []byte("d"), Kind: KindLock, Token: 13, Lock: &ExportLock{Mode: command.LockExclusive, Limit: 1, DelayLeft: 40}},
		}}
	b := ex.Encode()
	got, err := DecodeExport(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Encode(), b) {
		t.Fatal("decode → encode changed the export")
	}
	for name, mutate := range map[string]func(e *Export){
		"token above max":     func(e *Export) { e.Items[0].Token = 501 },
		"unlisted session":    func(e *Export) { e.Sessions = nil },
		"empty hash":          func(e *Export) { e.Items[1].Fields = nil },
		"empty lock":          func(e *Export) { e.Items[3].Lock.DelayLeft = 0 },
		"session with a TTL":  func(e *Export) { e.Items[2].Lock.Holders[1].TTL = 5 },
		"lease without a TTL": func(e *Export) { e.Items[2].Lock.Holders[0].TTL = 0 },
		"bad range":           func(e *Export) { e.From = 10 },
		"huge max token":      func(e *Export) { e.MaxToken = 1 << 63 },
		"unknown kind":        func(e *Export) { e.Items[0].Kind = 9 },
	} {
		cp, _ := DecodeExport(b)
		mutate(cp)
		if _, err := DecodeExport(cp.Encode()); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := DecodeExport(append(b, 0)); err == nil {
		t.Error("trailing byte accepted")
	}
}

// FuzzDecodeExport: the export decoder never panics or allocates for a count
// it cannot hold, what it accepts re-encodes to an export that round-trips,
// and it imports without panicking.
func FuzzDecodeExport(f *testing.F) {
	g := &group{ks: New()}
	for _, c := range []string{"SESSION.OPEN", "SET {z}a v PX 100 FENCE", "HSET {z}h f v", "LOCK.ACQUIRE {z}l o PX 100", "LOCK.ACQUIRE {z}m o SESSION 1 REENTRANT"} {
		g.v(c)
	}
	f.Add(g.migrate(command.MigrateFreeze, shard.Slot([]byte("z")), shard.Slot([]byte("z"))).Str)
	f.Add([]byte("LKX\x01\x00\x00\x00\x00\xff\xff\xff\xff\x0f"))
	f.Add([]byte("LKX\x0100\xff\x00\x00\x00")) // an overlong varint
	f.Fuzz(func(t *testing.T, b []byte) {
		ex, err := DecodeExport(b)
		if err != nil {
			return
		}
		enc := ex.Encode()
		again, err := DecodeExport(enc)
		if err != nil || !bytes.Equal(again.Encode(), enc) {
			t.Fatalf("an accepted export re-encodes to one that does not round-trip: %v", err)
		}
		h := &group{t: t, name: "h", ks: New()}
		if v := h.entry(command.KindImport, command.ImportArgs(b)); v.IsError() {
			t.Fatalf("an export that decodes does not import: %v", v)
		}
	})
}
