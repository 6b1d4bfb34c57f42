package group

import (
	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/lua"
	"github.com/lockd/lockd/resp"
)

// admitScript decides, on the leader, whether a script may enter the log. It
// reports false, with the reply, for an EVALSHA of a script neither the
// replicated cache nor this leader's dry engine holds, a script that does not load (compile error, bad
// shebang), and a script that does not finish its dry run: a run against a
// copy of the current state with fsm.DryRunBudget and fsm.DryRunMaxAlloc (out
// of budget, out of memory, or killed by SCRIPT KILL), or that sends a write
// command larger than Config.MaxWriteBytes (ErrTooLarge, as that command sent
// by a client would be). A statically bounded script (lua.Engine.Bounded) is
// admitted without the clone and the dry run when no command it can build
// from its arguments is that large (lua.Engine.MaxCommandBytes): it runs at
// most a few thousand instructions and cannot build large values from small
// arguments, so it is not the runaway the dry run is there to stop. Every other outcome of a run
// (an error the script raises included) is left to the apply, which answers
// the same on every replica.
func (s *Store) admitScript(op command.Eval, user string) (resp.Value, bool) {
	src := op.Source
	if src == nil {
		s.m.mu.RLock()
		src, _ = s.m.ks.Script(op.SHA)
		s.m.mu.RUnlock()
		if src == nil {
			// An EVAL of it admitted moments ago may not be applied yet (an
			// EVALSHA pipelined right behind it, as Redis clients send
			// them): the dry engine compiled it then. The apply decides:
			// it answers NOSCRIPT if the cache lacks the script in the
			// log's order (that EVAL failed to commit, or SCRIPT FLUSH).
			src, _ = s.dry.Source(op.SHA)
		}
		if src == nil {
			return resp.Error(lua.ErrNoScript), false
		}
	}
	// A script that does not load (it does not compile, or its shebang is
	// bad) is answered here with what the apply would answer. An EVALSHA of
	// a script the dry engine holds already skips hashing its source again.
	sha := op.SHA // the engine takes it in any case
	if op.Source != nil || !s.dry.Exists(sha) {
		var err error
		if sha, err = s.dry.Load(src); err != nil {
			return command.ErrorReply(err), false
		}
	}
	// A bounded script is admitted without a dry run only when no command it
	// can build from these arguments exceeds -max-write-bytes (the dry run
	// checks each write it makes).
	if n, bounded := s.dry.MaxCommandBytes(sha, op.Keys, op.Args); bounded && n <= int64(s.cfg.MaxWriteBytes) {
		s.metrics.scriptsBounded.Add(1)
		return resp.Value{}, true
	}
	s.m.mu.Lock()
	scratch := s.m.ks.Clone()
	s.m.mu.Unlock()
	now, wall := s.clock.read()
	kill := make(chan struct{})
	s.killMu.Lock()
	s.dryRuns[kill] = struct{}{}
	s.killMu.Unlock()
	v, tooLarge := scratch.DryRun(op, user, src, s.dry, now, wall, kill, s.cfg.MaxWriteBytes)
	s.killMu.Lock()
	delete(s.dryRuns, kill)
	s.killMu.Unlock()
	if tooLarge {
		s.metrics.tooLarge.Add(1)
		return v, false
	}
	switch {
	case lua.IsMemoryError(v):
		s.metrics.scriptsMemory.Add(1)
	case lua.IsBudgetError(v) || lua.IsKilledError(v):
		s.metrics.scriptsBudget.Add(1)
	}
	if v.IsError() && (lua.IsBudgetError(v) || lua.IsKilledError(v) || lua.IsMemoryError(v)) {
		return v, false
	}
	return resp.Value{}, true
}

// KillScripts stops the scripts in a dry run on this node. It reports whether
// there were any. A killed script is answered with lua.KilledErrorText and never
// enters the log; scripts already in the log are bounded by fsm.ApplyBudget.
func (s *Store) KillScripts() bool {
	s.killMu.Lock()
	defer s.killMu.Unlock()
	n := len(s.dryRuns)
	for ch := range s.dryRuns {
		close(ch)
		delete(s.dryRuns, ch)
	}
	return n > 0
}
