package fsm

import (
	"bytes"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/lua"
	"github.com/lockd/lockd/outcome"
	"github.com/lockd/lockd/resp"
)

// Instruction budgets of scripts. A script runs inside apply with ApplyBudget,
// the same on every replica, so a script that exceeds it fails identically
// everywhere (without rollback of what it already did, as in Redis). The leader
// first runs every script against a copy of the state with the smaller
// DryRunBudget and refuses it there if it does not finish, so a runaway script
// never enters the log; the larger apply budget leaves room for a script whose
// work grew between the dry run and the apply.
const (
	DryRunBudget = 50_000_000
	ApplyBudget  = 250_000_000
)

// DryRunMaxAlloc bounds what a script may allocate in the leader's dry run
// (lua.Limits.MaxAllocBytes): one that would build gigabytes of strings is
// refused before it enters the log and runs on every replica.
const DryRunMaxAlloc = 256 << 20

// scriptHost is what redis.call reaches: this keyspace at the entry's position
// in the log (or the read's point in time for read-only scripts).
type scriptHost struct {
	k  *Keyspace
	c  Ctx
	ro bool
}

// ACL failures of a command a script calls, as Redis 7 words them (the Lua
// bridge appends where in the script it happened).
const (
	errScriptNoPermCommand = "ERR The user executing the script can't run this command or subcommand"
	errScriptNoPermKey     = "ERR The user executing the script can't access at least one of the keys mentioned in the command arguments"
	errScriptNoPermChannel = "ERR The user executing the script can't publish to the channel mentioned in the command"
)

// authorize checks a command the script calls against the ACL of the user the
// script runs for (Ctx.User; nobody: no check). It uses the replicated user
// table, so every replica decides the same.
func (h *scriptHost) authorize(args [][]byte) (resp.Value, bool) {
	if h.c.User == "" {
		return resp.Value{}, false
	}
	u, ok := h.k.acl.User(h.c.User)
	if !ok {
		return resp.Error(errScriptNoPermCommand), true
	}
	switch u.Authorize(command.FullName(args), args) {
	case nil:
		return resp.Value{}, false
	case command.ErrNoPermKey:
		return resp.Error(errScriptNoPermKey), true
	case command.ErrNoPermChan:
		return resp.Error(errScriptNoPermChannel), true
	}
	return resp.Error(errScriptNoPermCommand), true
}

// Call runs one command for a script with Redis's checks and texts.
func (h *scriptHost) Call(args [][]byte) resp.Value {
	name := strings.ToLower(string(args[0]))
	spec, ok := command.Lookup(args[0])
	if !ok {
		switch {
		case name == "ping" && len(args) <= 2:
			if len(args) == 2 {
				return resp.Bulk(args[1])
			}
			return resp.Simple("PONG")
		case name == "time" && len(args) == 1:
			// The stamping leader's wall clock: the same on every replica.
			t := time.UnixMilli(h.c.Wall)
			return resp.Array(resp.BulkString(strconv.FormatInt(t.Unix(), 10)), resp.BulkString(strconv.Itoa(t.Nanosecond()/1000)))
		case command.NoScript(args):
			return resp.Error(lua.ErrNotAllowed)
		}
		return resp.Error(lua.ErrUnknownCommand)
	}
	if command.NoScript(args) {
		return resp.Error(lua.ErrNotAllowed)
	}
	if !spec.CheckArity(len(args)) {
		return resp.Error(lua.ErrWrongArity)
	}
	if v, denied := h.authorize(args); denied {
		return v
	}
	if spec.Writes() && (h.ro || !h.c.Write) {
		return resp.Error(lua.ErrWriteFromRO)
	}
	if v, refused := h.k.refuseWrite(spec, h.c); refused { // a replica of a Redis master: replica.go
		return v
	}
	if spec.Writes() && h.k.maxWrite > 0 {
		if n := command.Size(args); n > h.k.maxWrite {
			v := resp.Failed(outcome.TooLarge, fmt.Sprintf("%s: %d bytes, at most %d", ErrTooLargeText, n, h.k.maxWrite))
			if h.k.tooLarge.Kind != resp.KindError {
				h.k.tooLarge = v
			}
			return v
		}
	}
	op, err := spec.Parse(args)
	if err != nil {
		return errReply(err)
	}
	return h.k.Exec(op, h.c)
}

// eval runs EVAL/EVALSHA (and their _RO forms). EVAL fills the replicated
// script cache first.
func (k *Keyspace) eval(op command.Eval, c Ctx) resp.Value {
	c.Top = false // a script never blocks: WAIT is a try-once inside it
	if op.Source != nil {
		if !c.Write {
			return resp.Error("ERR internal: EVAL outside the log")
		}
		if _, err := k.scripts.Load(op.Source); err != nil {
			return resp.Error(err.Error())
		}
	}
	if v, ok := k.recipe(op, c); ok {
		return v
	}
	budget := k.budget
	if budget == 0 {
		budget = ApplyBudget
	}
	k.inScript = true
	defer func() { k.inScript = false }()
	return k.scripts.Run(op.SHA, op.Keys, op.Args, &scriptHost{k: k, c: c, ro: op.RO}, lua.Limits{MaxInstructions: budget, Cancel: k.cancel, MaxAllocBytes: k.maxAlloc})
}

// ErrTooLargeText starts the refusal of a write larger than the leader's
// -max-write-bytes: a client's command (raftstore.ErrTooLarge) or a command a
// script sends in its dry run.
const ErrTooLargeText = "ERR write too large for the log"

// Script returns the source of a script in the replicated cache (sha in any case).
func (k *Keyspace) Script(sha string) ([]byte, bool) { return k.scripts.Source(sha) }

// DryRun runs an EVAL or EVALSHA against a copy of the keyspace, as the leader
// does before it proposes the script, with DryRunBudget and the given script
// engine (a private compile cache: the replicated cache changes only in apply).
// The copy is discarded. Call it on a Clone, never on the live keyspace.
// Closing cancel stops it (SCRIPT KILL).
// With user set, what the script calls is checked against that user's ACL.
//
// Every write command the script sends must encode (command.Size) to at most
// maxWrite bytes (0: no limit), as a client's own command must: a larger one
// is refused to the script, and DryRun reports tooLarge with that refusal
// ("ERR write too large for the log: N bytes, at most M") as its reply,
// whatever the script did next, so that the script never enters the log.
// The check is the leader's alone (its -max-write-bytes), never the apply's.
func (k *Keyspace) DryRun(op command.Eval, user string, src []byte, engine *lua.Engine, now, wall int64, cancel <-chan struct{}, maxWrite int) (v resp.Value, tooLarge bool) {
	if _, err := engine.Load(src); err != nil {
		return resp.Error(err.Error()), false
	}
	k.scripts, k.budget, k.cancel, k.maxAlloc, k.maxWrite = engine, DryRunBudget, cancel, DryRunMaxAlloc, maxWrite
	if now > k.now {
		k.now = now
	}
	op.Source = nil
	v = k.eval(op, Ctx{Index: k.Logical() + 1, Now: k.now, Wall: wall, Write: true, User: user})
	if k.tooLarge.Kind == resp.KindError {
		return k.tooLarge, true
	}
	return v, false
}

// Clone returns a copy of the keyspace that shares nothing mutable with it
// (the trees are copied on write). Call it with the apply lock held: copying a
// tree marks the original.
func (k *Keyspace) Clone() *Keyspace {
	sessions := make(map[uint64]*session, len(k.sessions))
	for id, s := range k.sessions {
		cp := *s
		cp.locks, cp.index = append([]string(nil), s.locks...), nil
		sessions[id] = &cp
	}
	return &Keyspace{items: k.items.Copy(), deadlines: k.deadlines.Copy(), lockTimers: k.lockTimers.Copy(),
		now: k.now, index: k.index, scripts: k.scripts, sessions: sessions, namespaces: k.namespaces,
		base: k.base, frozen: k.frozen, gone: k.gone, shardMap: k.shardMap, shardVer: k.shardVer,
		acl: k.acl, settings: k.settings, owned: maps.Clone(k.owned)}
}

// recipe runs a lock recipe (lua.Engine.Recipe) without the interpreter:
// GET KEYS[1]; 0 unless it holds ARGV[1] (-1 for CompareAndDeleteOrMissing
// when it is absent); else the reply of DEL KEYS[1] or PEXPIRE KEYS[1]
// ARGV[2] — what the script would return, with the same effects. Each
// command goes through scriptHost.Call, as redis.call sends it, with its
// checks (ACL, read-only). It reports false, having changed nothing,
// wherever the script would raise an error (a key of another type, a
// command refused or failing, a missing argument), and the interpreter runs
// the script instead. CompareAndDeleteEach is releaseEach.
//
// Its DEL of a key found holding ARGV[1] is the owner's release
// (releaseDel): the group remembers the value removed, and only that
// deletion is remembered. A Redlock client's release
// (CompareAndDeleteOrMissing, redsync's) of a key that is absent because an
// earlier release deleted it holding ARGV[1] answers 1, as that release
// did, while FeatureSameValueNX is on: see releasedBefore (watch.go) and
// released. A key absent because of a DEL, GETDEL, FLUSHALL, RESTORE …
// REPLACE, an EXPIRE to the past or an expiry answers as Redis does (-1):
// its owner did not hold it until it released it. The plain
// CompareAndDelete answers 0 for an absent key always, as Redis does: it is
// the release of the single-instance clients (redislock, go-redis scripts),
// whose second release through the one server they use must hear that the
// lock is not held.
func (k *Keyspace) recipe(op command.Eval, c Ctx) (resp.Value, bool) {
	r := k.scripts.Recipe(op.SHA)
	if r == lua.CompareAndDeleteEach {
		return k.releaseEach(op, c)
	}
	if r == lua.NoRecipe || len(op.Keys) != 1 {
		return resp.Value{}, false
	}
	key := op.Keys[0]
	var write [][]byte
	switch {
	case (r == lua.CompareAndDelete || r == lua.CompareAndDeleteOrMissing) && len(op.Args) >= 1:
		write = [][]byte{[]byte("DEL"), key}
	case r == lua.CompareAndPexpire && len(op.Args) >= 2:
		write = [][]byte{[]byte("PEXPIRE"), key, op.Args[1]}
	default:
		return resp.Value{}, false
	}
	h := &scriptHost{k: k, c: c, ro: op.RO}
	got := h.Call([][]byte{[]byte("GET"), key})
	switch {
	case got.Kind == resp.KindNull && r == lua.CompareAndDeleteOrMissing && h.released(key, op.Args[0]):
		return resp.Int(1), true
	case got.Kind == resp.KindNull && r == lua.CompareAndDeleteOrMissing:
		return resp.Int(-1), true
	case got.Kind == resp.KindNull:
		return resp.Int(0), true
	case got.Kind != resp.KindBulk:
		return resp.Value{}, false // WRONGTYPE or a refusal: the script raises it
	case !bytes.Equal(got.Str, op.Args[0]):
		return resp.Int(0), true
	}
	var v resp.Value // an error changed nothing (a refusal, a bad PEXPIRE argument)
	if r == lua.CompareAndPexpire {
		v = h.Call(write)
	} else {
		v = k.releaseDel(key, func() resp.Value { return h.Call(write) }) // the owner's release: watch.go
	}
	return v, v.Kind != resp.KindError
}

// releaseEach runs lua.CompareAndDeleteEach natively: for each key in order,
// GET it and, when it holds ARGV[1], DEL it (a DEL that fails is ignored, as
// redis.pcall does) and count it; the reply is the count. A GET that would
// raise an error (WRONGTYPE, a refusal) makes it report false, having changed
// nothing (every GET is tried before any DEL), and the interpreter runs the
// script. Each such DEL is the owner's release (releaseDel): its value is
// remembered. With FeatureSameValueNX on, a key that the release finds
// absent because an earlier release deleted it holding ARGV[1] counts too,
// as it did in that release (releasedBefore), except a key named again in
// KEYS; one absent after any other deletion (a DEL, an expiry …) does not.
func (k *Keyspace) releaseEach(op command.Eval, c Ctx) (resp.Value, bool) {
	if len(op.Args) < 1 {
		return resp.Value{}, false
	}
	h := &scriptHost{k: k, c: c, ro: op.RO}
	for _, key := range op.Keys {
		if got := h.Call([][]byte{[]byte("GET"), key}); got.Kind != resp.KindNull && got.Kind != resp.KindBulk {
			return resp.Value{}, false
		}
	}
	var count int64
	var seen map[string]bool // the keys before this one, once one is absent
	for i, key := range op.Keys {
		// A DEL of one key changes no other key's type: this GET answers
		// as the one above, or nil for a key named twice and deleted.
		got := h.Call([][]byte{[]byte("GET"), key})
		switch {
		case got.Kind == resp.KindBulk && bytes.Equal(got.Str, op.Args[0]):
			k.releaseDel(key, func() resp.Value { return h.Call([][]byte{[]byte("DEL"), key}) })
			count++
		case got.Kind == resp.KindNull && h.released(key, op.Args[0]):
			if seen == nil {
				seen = make(map[string]bool, len(op.Keys))
				for _, before := range op.Keys[:i] {
					seen[string(before)] = true
				}
			}
			if !seen[string(key)] { // the release counted a key once
				count++
			}
		}
		if seen != nil {
			seen[string(key)] = true
		}
	}
	return resp.Int(count), true
}

// released reports whether a release of key by the owner of val, which
// found key absent, answers as the owner's earlier release did: the group's
// FeatureSameValueNX is on, the script may write and its user may DEL key
// (the release it repeats did), and key's most recent deletion was an
// earlier release's, of val (Keyspace.releasedBefore).
func (h *scriptHost) released(key, val []byte) bool {
	if h.k.settings.Features&command.FeatureSameValueNX == 0 || h.ro || !h.c.Write {
		return false
	}
	if _, denied := h.authorize([][]byte{[]byte("DEL"), key}); denied {
		return false
	}
	return h.k.releasedBefore(key, val)
}
