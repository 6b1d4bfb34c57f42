package lua

import (
	"strings"

	glua "github.com/yuin/gopher-lua"

	"github.com/lockd/lockd/resp"
)

// RedisVersion is what redis.REDIS_VERSION reports: the Redis whose
// scripting this package reproduces.
const RedisVersion = "7.0.15"

// redisVersionNum is REDIS_VERSION_NUM: 0x00MMmmpp.
const redisVersionNum = 7<<16 | 0<<8 | 15

// The redis.log levels.
const (
	LogDebug   = 0
	LogVerbose = 1
	LogNotice  = 2
	LogWarning = 3
)

func (s *state) redisFuncs() map[string]glua.LValue {
	L := s.L
	fn := func(f glua.LGFunction) glua.LValue { return L.NewFunction(f) }
	return map[string]glua.LValue{
		"call":               fn(func(L *glua.LState) int { return s.redisCall(L, true) }),
		"pcall":              fn(func(L *glua.LState) int { return s.redisCall(L, false) }),
		"sha1hex":            fn(s.redisSha1hex),
		"error_reply":        fn(redisErrorReply),
		"status_reply":       fn(redisStatusReply),
		"log":                fn(s.redisLog),
		"setresp":            fn(s.redisSetresp),
		"set_repl":           fn(redisSetRepl),
		"replicate_commands": fn(func(L *glua.LState) int { L.Push(glua.LTrue); return 1 }),
		"breakpoint":         fn(func(L *glua.LState) int { L.Push(glua.LFalse); return 1 }),
		"debug":              fn(func(L *glua.LState) int { return 0 }),
		"acl_check_cmd":      fn(s.redisACLCheck),
		"LOG_DEBUG":          glua.LNumber(LogDebug),
		"LOG_VERBOSE":        glua.LNumber(LogVerbose),
		"LOG_NOTICE":         glua.LNumber(LogNotice),
		"LOG_WARNING":        glua.LNumber(LogWarning),
		"REDIS_VERSION":      glua.LString(RedisVersion),
		"REDIS_VERSION_NUM":  glua.LNumber(redisVersionNum),
		"REPL_NONE":          glua.LNumber(0),
		"REPL_AOF":           glua.LNumber(1),
		"REPL_SLAVE":         glua.LNumber(2),
		"REPL_REPLICA":       glua.LNumber(2),
		"REPL_ALL":           glua.LNumber(3),
	}
}

// raiseRedis raises an error table, as Redis's luaPushError + lua_error.
func raiseRedis(L *glua.LState, msg string) {
	L.Error(errorTable(L, msg), 0)
}

// commandArgs is luaArgsToRedisArgv: strings as they are, numbers as
// "%.17g", anything else refused.
func commandArgs(L *glua.LState) ([][]byte, string) {
	n := L.GetTop()
	if n == 0 {
		return nil, "Please specify at least one argument for this redis lib call"
	}
	args := make([][]byte, n)
	for i := 1; i <= n; i++ {
		switch v := L.Get(i).(type) {
		case glua.LNumber:
			args[i-1] = []byte(fmtArg(float64(v)))
		case glua.LString:
			args[i-1] = []byte(string(v))
		default:
			return nil, "Lua redis lib command arguments must be strings or integers"
		}
	}
	return args, ""
}

// redisCall is redis.call (raise) and redis.pcall.
func (s *state) redisCall(L *glua.LState, raise bool) int {
	args, bad := commandArgs(L)
	L.SetTop(0)
	if bad != "" {
		t := errorTable(L, bad)
		if raise {
			L.Error(t, 0)
		}
		L.Push(t)
		return 1
	}
	reply := s.callHost(args)
	v := s.toLua(reply)
	if raise && reply.Kind == resp.KindError {
		L.Error(v, 0)
	}
	L.Push(v)
	return 1
}

// callHost calls the host, turning a panic into a recorded value that Run
// re-raises once the interpreter is clean again.
func (s *state) callHost(args [][]byte) (reply resp.Value) {
	if s.r.host == nil {
		return resp.Error(ErrUnknownCommand)
	}
	defer func() {
		if p := recover(); p != nil {
			s.r.hostPanic = p
			reply = resp.Error("ERR host panicked")
		}
	}()
	return s.r.host.Call(args)
}

// sha1Weight is how many bytes of copying hashing one byte is charged as.
const sha1Weight = 4

func (s *state) redisSha1hex(L *glua.LState) int {
	if L.GetTop() != 1 {
		raiseRedis(L, "wrong number of arguments")
	}
	str, _ := toStringLua(L.Get(1))
	m := s.meter(L)
	m.bytes(sha1Weight * len(str)) // SHA-1 reads a byte several times slower than a copy
	m.done()
	L.Push(glua.LString(SHA1Hex([]byte(str))))
	return 1
}

func redisErrorReply(L *glua.LState) int {
	str, ok := L.Get(-1).(glua.LString)
	if L.GetTop() != 1 || !ok {
		L.Push(errorTable(L, "wrong number or type of arguments"))
		return 1
	}
	msg := cString(string(str))
	if !strings.HasPrefix(msg, "-") {
		msg = "-" + msg
	}
	L.Push(errorTable(L, msg))
	return 1
}

func redisStatusReply(L *glua.LState) int {
	str, ok := L.Get(-1).(glua.LString)
	if L.GetTop() != 1 || !ok {
		L.Push(errorTable(L, "wrong number or type of arguments"))
		return 1
	}
	t := L.CreateTable(0, 1)
	t.RawSetString("ok", str)
	L.Push(t)
	return 1
}

// redisLog is redis.log(level, message...): checked as Redis checks it,
// then handed to the Engine's logger, if any.
func (s *state) redisLog(L *glua.LState) int {
	argc := L.GetTop()
	if argc < 2 {
		raiseRedis(L, "redis.log() requires two arguments or more.")
	}
	lv, ok := toNumber(L.Get(1))
	if !ok {
		raiseRedis(L, "First argument must be a number (log level).")
	}
	level := toInt32(lv)
	if level < LogDebug || level > LogWarning {
		raiseRedis(L, "Invalid debug level.")
	}
	if s.r.logf == nil {
		return 0
	}
	var b strings.Builder
	for j := 2; j <= argc; j++ {
		if str, ok := toStringLua(L.Get(j)); ok {
			if j != 2 {
				b.WriteByte(' ')
			}
			b.WriteString(str)
		}
	}
	s.r.logf(int(level), b.String())
	return 0
}

func (s *state) redisSetresp(L *glua.LState) int {
	if L.GetTop() != 1 {
		raiseRedis(L, "redis.setresp() requires one argument.")
	}
	f, _ := toNumber(L.Get(1))
	v := toInt32(f)
	if v != 2 && v != 3 {
		raiseRedis(L, "RESP version must be 2 or 3.")
	}
	s.r.resp = int(v)
	return 0
}

// redisSetRepl is redis.set_repl: lockd replicates the whole script
// through the log, so there is nothing to switch; the arguments are checked.
func redisSetRepl(L *glua.LState) int {
	if L.GetTop() != 1 {
		raiseRedis(L, "redis.set_repl() requires two arguments.")
	}
	f, _ := toNumber(L.Get(-1))
	if toInt32(f)&^3 != 0 {
		raiseRedis(L, "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.")
	}
	return 0
}

// redisACLCheck is redis.acl_check_cmd(command, args...).
func (s *state) redisACLCheck(L *glua.LState) int {
	args, bad := commandArgs(L)
	if bad != "" {
		raiseRedis(L, bad)
	}
	known, allowed := true, true
	if c, ok := s.r.host.(ACLChecker); ok {
		known, allowed = c.ACLCheck(args)
	}
	if !known {
		raiseRedis(L, "Invalid command passed to redis.acl_check_cmd()")
	}
	L.SetTop(0)
	L.Push(glua.LBool(allowed))
	return 1
}
