package fsm

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
	"github.com/lockd/lockd/shard"
)

// openAs applies a user's SESSION.OPEN as the leader proposes it once owners
// are on (a KindScriptAs entry) and returns the reply.
func (g *group) openAs(user string) resp.Value {
	return g.entry(command.KindScriptAs, command.ScriptAsArgs(user, args("SESSION.OPEN")))
}

// settings applies a KindSettings entry.
func (g *group) settings(s command.Settings) {
	g.t.Helper()
	if v := g.entry(command.KindSettings, command.SettingsArgs(s)); v.String() != "OK" {
		g.t.Fatalf("%s: settings %+v: %v", g.name, s, v)
	}
}

// sessionID is the session_id of a SESSION.OPEN reply.
func sessionID(t *testing.T, v resp.Value) uint64 {
	t.Helper()
	if v.Kind != resp.KindMap || len(v.Elems) < 2 {
		t.Fatalf("SESSION.OPEN = %v", v)
	}
	return uint64(v.Elems[1].Int)
}

// A session belongs to the user whose SESSION.OPEN entry opened it once the
// settings turn owners on; before that it has none. The owner, the settings
// and the per-user count survive a snapshot (version 5); a keyspace without
// either still writes version 4, which the version before owners reads.
func TestSessionOwnerSnapshot(t *testing.T) {
	g := newGroup(t, "g")
	before := sessionID(t, g.openAs("billing"))
	if owner, open := g.ks.SessionOwner(before); !open || owner != "" {
		t.Fatalf("session opened before owners were on: owner %q, open %v; want none", owner, open)
	}
	var buf bytes.Buffer
	g.ks.Snapshot().WriteTo(&buf)
	if buf.Bytes()[3] != 4 {
		t.Fatalf("snapshot without owners or settings written as version %d, want 4", buf.Bytes()[3])
	}

	g.settings(command.Settings{Features: command.FeatureOwners, MaxSessionsPerUser: 2})
	id := sessionID(t, g.openAs("billing"))
	plain := sessionID(t, g.v("SESSION.OPEN")) // a request without a user
	if owner, _ := g.ks.SessionOwner(id); owner != "billing" {
		t.Fatalf("owner %q, want billing", owner)
	}
	if owner, _ := g.ks.SessionOwner(plain); owner != "" {
		t.Fatalf("a SESSION.OPEN without a user has owner %q", owner)
	}
	buf.Reset()
	g.ks.Snapshot().WriteTo(&buf)
	if buf.Bytes()[3] != 5 {
		t.Fatalf("snapshot with owners written as version %d, want 5 (6 waits for the features of pipe version 4)", buf.Bytes()[3])
	}
	r := New()
	if err := r.Restore(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	for sid, want := range map[uint64]string{before: "", id: "billing", plain: ""} {
		if owner, open := r.SessionOwner(sid); !open || owner != want {
			t.Errorf("restored session %d: owner %q open %v, want %q", sid, owner, open, want)
		}
	}
	if s := r.Settings(); s != g.ks.Settings() {
		t.Errorf("restored settings %+v, want %+v", s, g.ks.Settings())
	}
	if n := r.SessionsOf("billing"); n != 1 {
		t.Errorf("restored count for billing %d, want 1", n)
	}
	// The restored keyspace still caps billing at 2 (one more, then refused).
	h := &group{t: t, name: "restored", ks: r, index: g.index, now: g.now}
	sessionID(t, h.openAs("billing"))
	if v := h.openAs("billing"); !v.IsError() || v.String() != string(command.ErrMaxSessions(2)) {
		t.Fatalf("third session of billing after the restore = %v, want %q", v, command.ErrMaxSessions(2))
	}
	// A truncated owner section is refused.
	b := buf.Bytes()
	if err := New().Restore(bytes.NewReader(b[:len(b)-1])); err == nil {
		t.Error("a snapshot with a truncated owner restored")
	}
}

// The cap counts a user's open sessions, deterministically in the FSM:
// sessions up to the cap open, the next is refused and changes nothing, a
// closed (or expired) one frees a place; users are counted apart, a user who
// manages every session (every key and admin command: the default user
// among them) is not capped, and a cap of 0 caps nobody.
func TestSessionCap(t *testing.T) {
	g := newGroup(t, "g")
	g.want("ACL SETUSER payouts on nopass ~payouts/* +@all -@admin -@dangerous", "+OK\r\n")
	g.want("ACL SETUSER ops on nopass ~* +@all", "+OK\r\n")
	g.settings(command.Settings{Features: command.FeatureOwners, MaxSessionsPerUser: 3})
	var ids []uint64
	for range 3 {
		ids = append(ids, sessionID(t, g.openAs("payouts")))
	}
	refused := g.openAs("payouts")
	if !refused.IsError() || !strings.HasPrefix(refused.String(), "ERR max sessions per user reached (3)") {
		t.Fatalf("fourth session = %v, want ERR max sessions per user reached (3)", refused)
	}
	if n := len(g.ks.Sessions()); n != 3 {
		t.Fatalf("%d sessions after the refusal, want 3", n)
	}
	sessionID(t, g.openAs("billing")) // another user's count
	for range 5 {
		sessionID(t, g.openAs("ops"))
		sessionID(t, g.openAs("default"))
	}
	g.want("SESSION.CLOSE "+strconv.FormatUint(ids[0], 10), ":0\r\n")
	sessionID(t, g.openAs("payouts"))
	g.expireSession(ids[1])
	sessionID(t, g.openAs("payouts"))
	if v := g.openAs("payouts"); !v.IsError() {
		t.Fatalf("over the cap again: %v", v)
	}
	g.settings(command.Settings{Features: command.FeatureOwners})
	sessionID(t, g.openAs("payouts"))
	// A settings entry never turns a feature off.
	g.settings(command.Settings{})
	if !g.ks.Settings().Owners() {
		t.Fatal("a settings entry turned owners off")
	}
}

// expireSession applies the leader's session-expiry entry for session id.
func (g *group) expireSession(id uint64) {
	g.entry(command.KindSessionExpire, command.SessionExpireArgs(id))
}

// A script of a restricted user (a KindScriptAs entry) may not close, keep
// alive or hold locks with another user's session; its own it may, and a
// session it opens is its own.
func TestSessionOwnerInScripts(t *testing.T) {
	g := newGroup(t, "g")
	g.want("ACL SETUSER payouts on nopass ~payouts/* +@all -@admin -@dangerous", "+OK\r\n")
	g.want("ACL SETUSER billing on nopass ~billing/* +@all -@admin -@dangerous", "+OK\r\n")
	g.settings(command.Settings{Features: command.FeatureOwners})
	billing := strconv.FormatUint(sessionID(t, g.openAs("billing")), 10)
	if v := g.v("LOCK.ACQUIRE billing/ledger w1 SESSION " + billing); v.Kind != resp.KindInt {
		t.Fatalf("billing's acquire: %v", v)
	}
	eval := func(user, script string, argv ...string) resp.Value {
		a := [][]byte{[]byte("EVAL"), []byte(script), []byte("0")}
		for _, s := range argv {
			a = append(a, []byte(s))
		}
		return g.entry(command.KindScriptAs, command.ScriptAsArgs(user, a))
	}
	for _, script := range []string{
		"return redis.call('SESSION.CLOSE', ARGV[1])",
		"return redis.call('SESSION.KEEPALIVE', ARGV[1])",
		"return redis.call('LOCK.ACQUIRE', 'payouts/x', 'p1', 'SESSION', ARGV[1])",
	} {
		if v := eval("payouts", script, billing); !v.IsError() || !strings.Contains(v.String(), string(command.ErrSessionNoPerm)) {
			t.Errorf("payouts' script %q on billing's session = %v, want %s", script, v, command.ErrSessionNoPerm)
		}
	}
	id, _ := strconv.ParseUint(billing, 10, 64)
	if _, open := g.ks.SessionOwner(id); !open {
		t.Fatal("billing's session was closed by payouts' script")
	}
	g.wantRead("EXISTS billing/ledger", ":1\r\n")
	if v := eval("billing", "return redis.call('SESSION.KEEPALIVE', ARGV[1])", billing); v.IsError() {
		t.Fatalf("billing's script on its own session: %v", v)
	}
	v := eval("payouts", "return redis.call('SESSION.OPEN')")
	if (v.Kind != resp.KindArray && v.Kind != resp.KindMap) || len(v.Elems) < 2 {
		t.Fatalf("payouts' script SESSION.OPEN = %v", v)
	}
	if owner, _ := g.ks.SessionOwner(uint64(v.Elems[1].Int)); owner != "payouts" {
		t.Fatalf("a session payouts' script opened belongs to %q", owner)
	}
}

// A session's owner travels with it: in an attach to another group, and in
// the export of a slot move (version 2 then; version 1, which the version
// before owners decodes, while no session has an owner).
func TestSessionOwnerTravels(t *testing.T) {
	src, dst := newGroup(t, "src"), newGroup(t, "dst")
	src.settings(command.Settings{Features: command.FeatureOwners})
	dst.settings(command.Settings{Features: command.FeatureOwners})
	id := sessionID(t, src.openAs("billing"))
	key := "{b}ledger"
	slot := shard.Slot([]byte(key))
	if v := src.v("LOCK.ACQUIRE " + key + " w1 SESSION " + strconv.FormatUint(id, 10)); v.Kind != resp.KindInt {
		t.Fatalf("acquire: %v", v)
	}
	frozen := src.migrate(command.MigrateFreeze, slot, slot)
	if frozen.Kind != resp.KindBulk || frozen.Str[3] != exportVersion {
		t.Fatalf("freeze = %v, want a version %d export", frozen, exportVersion)
	}
	ex, err := DecodeExport(frozen.Str)
	if err != nil || len(ex.Sessions) != 1 || ex.Sessions[0].Owner != "billing" {
		t.Fatalf("export sessions %+v, %v; want billing's", ex, err)
	}
	if v := dst.entry(command.KindImport, command.ImportArgs(frozen.Str)); v.IsError() {
		t.Fatalf("import: %v", v)
	}
	if owner, open := dst.ks.SessionOwner(id); !open || owner != "billing" {
		t.Fatalf("imported session: owner %q open %v", owner, open)
	}
	// Without owners the export is version 1.
	ex.Sessions[0].Owner = ""
	if b := ex.Encode(); b[3] != 1 {
		t.Fatalf("an export without owners encoded as version %d", b[3])
	}
	// An attach carries the owner; one without stays ownerless.
	other := newGroup(t, "other")
	other.entry(command.KindSessionAttach, command.SessionAttachOwnerArgs(900, 12000, "billing"))
	other.entry(command.KindSessionAttach, command.SessionAttachArgs(901, 12000))
	if owner, _ := other.ks.SessionOwner(900); owner != "billing" {
		t.Fatalf("attached session's owner %q", owner)
	}
	if owner, open := other.ks.SessionOwner(901); !open || owner != "" {
		t.Fatalf("ownerless attach: owner %q open %v", owner, open)
	}
}
