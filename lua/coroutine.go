package lua

import (
	glua "github.com/yuin/gopher-lua"
)

// Coroutines: gopher-lua gives a new thread a child context.WithCancel of
// its parent's context, whose Done channel the budget does not control. The
// threads made here share the run's budget instead, so that instructions
// run in a coroutine count too.

// luaCoCreate is coroutine.create(f).
func (s *state) luaCoCreate(L *glua.LState) int {
	fn, ok := L.Get(1).(*glua.LFunction)
	if !ok || fn.IsG {
		argError(L, 1, "Lua function expected")
	}
	L.SetTop(1)
	s.newThread(L)
	return 1
}

// newThread calls gopher-lua's coroutine.create (function at index 1) with
// no context in force, then gives the thread the run's budget.
func (s *state) newThread(L *glua.LState) *glua.LState {
	if s.r.budget != nil {
		L.RemoveContext()
		defer L.SetContext(s.r.budget)
	}
	// Threads get a small, growing stack (the main state's fixed one is
	// 1.6 MB); theirs overflows with a panic that resume rewords.
	opts := L.Options
	L.Options.MinimizeStackMemory = true
	L.Options.RegistrySize = 256
	defer func() { L.Options = opts }()
	s.coCreate.GFunction(L)
	th := L.Get(-1).(*glua.LState)
	if s.r.budget != nil {
		th.SetContext(s.r.budget)
	}
	return th
}

// luaCoResume is coroutine.resume(co, ...), with Lua 5.1's messages.
func (s *state) luaCoResume(L *glua.LState) int {
	th, ok := L.Get(1).(*glua.LState)
	if !ok {
		typeError(L, 1, "coroutine")
	}
	n := s.coResume.GFunction(L)
	if n >= 2 && L.Get(L.GetTop()-n+1) == glua.LFalse {
		at := L.GetTop() - n + 2
		switch msg := L.Get(at); msg {
		case glua.LString("can not resume a dead thread"):
			L.Replace(at, glua.LString("cannot resume dead coroutine"))
		case glua.LString("can not resume a running thread"):
			L.Replace(at, glua.LString("cannot resume non-suspended coroutine"))
		case glua.LString("lua callstack overflow"):
			L.Replace(at, glua.LString(where(th, 0)+"stack overflow"))
		default:
			if th.Dead {
				L.Replace(at, s.translate(th, msg, 0))
			}
		}
	}
	return n
}

// luaCoWrap is coroutine.wrap(f): a function that resumes the coroutine
// and raises its errors (strings get the caller's position, as in Lua).
func (s *state) luaCoWrap(L *glua.LState) int {
	fn, ok := L.Get(1).(*glua.LFunction)
	if !ok || fn.IsG {
		argError(L, 1, "Lua function expected")
	}
	L.SetTop(1)
	th := s.newThread(L)
	resume := L.NewFunction(s.luaCoResume)
	L.Push(L.NewFunction(func(L *glua.LState) int {
		nargs := L.GetTop()
		L.Insert(th, 1)
		L.Insert(resume, 1)
		L.Call(nargs+1, glua.MultRet)
		if L.Get(1) == glua.LFalse {
			msg := L.Get(2)
			if str, ok := toStringLua(msg); ok {
				msg = glua.LString(where(L, 1) + str)
			}
			L.Error(msg, 0)
		}
		L.Remove(1)
		return L.GetTop()
	}))
	return 1
}

// yieldFn is coroutine.yield: gopher-lua's, except in the main thread,
// where Lua 5.1 refuses with its own message.
func (s *state) yieldFn(orig *glua.LFunction) glua.LValue {
	return s.L.NewFunction(func(L *glua.LState) int {
		if L == L.G.MainThread {
			L.Error(glua.LString("attempt to yield across metamethod/C-call boundary"), 0)
		}
		return orig.GFunction(L)
	})
}
