package redisproto

import (
	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
)

// SCRIPT LOAD|EXISTS|FLUSH|KILL|HELP. LOAD and FLUSH change the replicated
// script cache, so they go through the log; EXISTS is a read; KILL stops a
// script that is still in the leader's dry run (scripts in the log cannot be
// stopped: they are bounded by their instruction budget instead).
func init() {
	handle("script|load", func(c *conn, a [][]byte) resp.Value {
		return c.storeOp(command.ScriptLoad{Source: a[2]}, command.ScriptLoadSpec)
	})
	handle("script|exists", func(c *conn, a [][]byte) resp.Value {
		return c.storeOp(command.ScriptExists{SHAs: a[2:]}, command.ScriptExistsSpec)
	})
	handle("script|flush", func(c *conn, a [][]byte) resp.Value {
		if len(a) > 3 || (len(a) == 3 && !command.EqualFold(a[2], "async") && !command.EqualFold(a[2], "sync")) {
			return resp.Error("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
		}
		return c.storeOp(command.ScriptFlush{}, command.ScriptFlushSpec)
	})
	handle("script|kill", func(c *conn, _ [][]byte) resp.Value {
		if !c.srv.store.KillScripts() {
			return resp.Error("NOTBUSY No scripts in execution right now.")
		}
		return resp.OK
	})
	handle("script|help", func(*conn, [][]byte) resp.Value {
		return help("SCRIPT", "EXISTS <sha1> [<sha1> ...]",
			"    Return information about the existence of the scripts in the script cache.",
			"FLUSH [ASYNC|SYNC]", "    Flush the Lua scripts cache. Very dangerous on replicas.",
			"    When called without the optional mode argument, the behavior is determined by the",
			"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
			"    * ASYNC: Asynchronously flush the scripts cache.", "    * SYNC: Synchronously flush the scripts cache.",
			"KILL", "    Kill the currently executing Lua script.", "LOAD <script>", "    Load a script into the scripts cache without executing it.")
	})
}

// storeOp sends one operation that the front door built to the store, as
// the connection's user.
func (c *conn) storeOp(op command.Op, spec *command.Spec) resp.Value {
	return c.srv.store.Do(c.srv.ctx, []command.Request{{Op: op, Spec: spec, User: c.userName()}})[0]
}
