package redisproto

import (
	"strings"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/lua"
	"github.com/lockd/lockd/resp"
)

// txState is a connection's open MULTI: the queued commands (copied: the read
// buffer is reused) and whether one of them was rejected when queued.
type txState struct {
	queued [][][]byte
	dirty  bool
}

func init() {
	handle("multi", cmdMulti)
	handle("exec", cmdExec)
	handle("discard", cmdDiscard)
	handle("watch", cmdWatch)
	handle("unwatch", func(c *conn, _ [][]byte) resp.Value {
		c.watches = nil
		return resp.OK
	})
}

// txControl names the commands that run at once even inside MULTI. Redis
// decides this by command too, not by a flag (processCommand in server.c
// lists the same six), so the list is kept here rather than in the rows.
func txControl(name []byte) bool {
	switch strings.ToLower(string(name)) {
	case "exec", "discard", "multi", "watch", "quit", "reset":
		return true
	}
	return false
}

// enqueue answers a command sent inside MULTI: QUEUED, or the error that makes
// EXEC abort (unknown command, wrong arity), as Redis 7 does.
func (c *conn) enqueue(args [][]byte) resp.Value {
	if spec, ok := command.Lookup(args[0]); ok {
		if !spec.CheckArity(len(args)) {
			c.tx.dirty = true
			return resp.Error(string(command.ErrArity(spec.Name)))
		}
		// A keyspace container (OBJECT, MEMORY) is refused when queued for
		// an unknown subcommand or a subcommand's wrong arity, as Redis
		// refuses it, not at EXEC.
		sub, known := command.Subcommand(spec, args)
		if !known {
			c.tx.dirty = true
			return errUnknownSubcommand(args[0], args[1])
		}
		if !sub.CheckArity(len(args)) {
			c.tx.dirty = true
			return resp.Error(string(command.ErrArity(sub.Name)))
		}
		if c.scriptUser(spec) != "" {
			// A transaction's entry carries no user to check a script's
			// commands against: such a user runs its scripts outside MULTI.
			c.tx.dirty = true
			return resp.Error("ERR a script inside MULTI is not available to a user with ACL restrictions; run it outside MULTI")
		}
	} else {
		s, ok := locals[strings.ToLower(string(args[0]))]
		if !ok {
			c.tx.dirty = true
			return errUnknownCommand(args)
		}
		if s.sub != nil && len(args) >= 2 {
			sub, ok := s.sub[strings.ToLower(string(args[1]))]
			if !ok {
				c.tx.dirty = true
				return errUnknownSubcommand(args[0], args[1])
			}
			s = sub
		}
		if !s.CheckArity(len(args)) {
			c.tx.dirty = true
			return resp.Error(string(command.ErrArity(s.Name)))
		}
	}
	cp := make([][]byte, len(args))
	for i, a := range args {
		cp[i] = append([]byte(nil), a...)
	}
	c.tx.queued = append(c.tx.queued, cp)
	return resp.Simple("QUEUED")
}

// MULTI
func cmdMulti(c *conn, _ [][]byte) resp.Value {
	if c.tx != nil {
		return resp.Error("ERR MULTI calls can not be nested")
	}
	c.tx = &txState{}
	return resp.OK
}

// DISCARD
func cmdDiscard(c *conn, _ [][]byte) resp.Value {
	if c.tx == nil {
		return resp.Error("ERR DISCARD without MULTI")
	}
	c.tx, c.watches = nil, nil
	return resp.OK
}

// WATCH key [key ...] — records each key's version; EXEC fails if one changed.
func cmdWatch(c *conn, a [][]byte) resp.Value {
	if c.tx != nil {
		return resp.Error("ERR WATCH inside MULTI is not allowed")
	}
	keys := make([][]byte, len(a)-1)
	for i, k := range a[1:] {
		keys[i] = append([]byte(nil), k...)
	}
	v := c.storeOp(command.Versions{Keys: keys}, command.VersionsSpec)
	if v.IsError() {
		return v
	}
	for i, k := range keys {
		c.watches = append(c.watches, command.Watched{Key: k, Version: uint64(v.Elems[i].Int)})
	}
	return resp.OK
}

// EXEC — the queued keyspace commands go to the log as one entry, so they apply
// atomically on every replica; queued local commands are answered in place.
func cmdExec(c *conn, _ [][]byte) resp.Value {
	tx, watches := c.tx, c.watches
	if tx == nil {
		return resp.Error("ERR EXEC without MULTI")
	}
	c.tx, c.watches = nil, nil
	if tx.dirty {
		return resp.Error("EXECABORT Transaction discarded because of previous errors.")
	}
	var ks [][][]byte
	for _, args := range tx.queued {
		if _, ok := command.Lookup(args[0]); ok {
			ks = append(ks, args)
		}
	}
	c.trackTx(ks)                     // before the store sees it (tracking.go)
	scripts := c.txScripts(tx.queued) // before the transaction (txScripts)
	var applied resp.Value
	if len(ks) > 0 || len(watches) > 0 {
		applied = c.storeOp(command.Tx{Watch: watches, Cmds: ks}, command.TxSpec)
		if applied.Kind != resp.KindArray {
			return applied // a watched key changed (nil), or the write failed
		}
	}
	out := make([]resp.Value, len(tx.queued))
	j := 0
	for i, args := range tx.queued {
		if _, ok := command.Lookup(args[0]); ok {
			out[i] = applied.Elems[j]
			j++
		} else if v, ok := scripts[i]; ok {
			out[i] = v
		} else {
			out[i] = c.local(args)
		}
	}
	return resp.Array(out...)
}

// txScripts answers the SCRIPT LOAD and SCRIPT EXISTS commands queued in a
// transaction, by position, before the transaction's entry is proposed. The
// transaction's entry holds keyspace commands only, and SCRIPT commands are
// answered around it, so without this an EVALSHA queued after SCRIPT LOAD
// would find no script, and a SCRIPT EXISTS queued before an EVAL would
// find the script that EVAL loads. So: each SCRIPT LOAD is sent first (the
// cache only grows, so loading early changes nothing but what an EVALSHA
// queued before the LOAD finds: it runs, where Redis answers NOSCRIPT), and
// each SCRIPT EXISTS is answered from the cache as it stood before the
// transaction plus the scripts that EVAL and SCRIPT LOAD queued before it
// load, less all after a SCRIPT FLUSH queued before it. SCRIPT FLUSH itself
// still runs after the transaction, where Redis runs it.
func (c *conn) txScripts(queued [][][]byte) map[int]resp.Value {
	isScript := func(args [][]byte, sub string) bool {
		return len(args) >= 2 && command.EqualFold(args[0], "script") && command.EqualFold(args[1], sub)
	}
	var asked [][]byte // every SHA a SCRIPT EXISTS asks about
	for _, args := range queued {
		if isScript(args, "exists") && len(args) >= 3 {
			asked = append(asked, args[2:]...)
		}
	}
	before := map[string]bool{} // the cache before the transaction, for those
	if len(asked) > 0 {
		v := c.storeOp(command.ScriptExists{SHAs: asked}, command.ScriptExistsSpec)
		for j, sha := range asked {
			before[strings.ToLower(string(sha))] = v.Kind == resp.KindArray && j < len(v.Elems) && v.Elems[j].Int == 1
		}
	}
	out := map[int]resp.Value{}
	for i, args := range queued {
		if isScript(args, "load") && len(args) == 3 {
			out[i] = c.local(args)
		}
	}
	loaded := map[string]bool{}
	flushed := false
	for i, args := range queued {
		switch {
		case isScript(args, "flush"):
			flushed, loaded = true, map[string]bool{}
		case isScript(args, "load") && len(args) == 3:
			loaded[lua.SHA1Hex(args[2])] = true
		case (command.EqualFold(args[0], "eval") || command.EqualFold(args[0], "eval_ro")) && len(args) >= 2:
			loaded[lua.SHA1Hex(args[1])] = true
		case isScript(args, "exists") && len(args) >= 3:
			elems := make([]resp.Value, len(args)-2)
			for j, sha := range args[2:] {
				k := strings.ToLower(string(sha))
				elems[j] = resp.Zero
				if loaded[k] || (!flushed && before[k]) {
					elems[j] = resp.One
				}
			}
			out[i] = resp.Array(elems...)
		}
	}
	return out
}
