package lua

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"strings"
	"sync"

	glua "github.com/yuin/gopher-lua"

	"github.com/lockd/lockd/resp"
)

// Host is what redis.call and redis.pcall reach: the keyspace the script
// runs against. Call runs on the goroutine that called Engine.Run (inside the
// Raft apply) and must be deterministic. args[0] is the command name exactly
// as the script passed it (any case). It returns the command's reply as the
// script's RESP2/RESP3-neutral value; errors are resp.KindError values whose
// text starts with the error code ("ERR ...", "WRONGTYPE ..."). Commands a
// script may not run are answered with the Err* texts below, as Redis does.
type Host interface {
	Call(args [][]byte) resp.Value
}

// HostFunc adapts a function to Host.
type HostFunc func(args [][]byte) resp.Value

// Call implements Host.
func (f HostFunc) Call(args [][]byte) resp.Value { return f(args) }

// ACLChecker is an optional interface of a Host, found by type assertion,
// that answers redis.acl_check_cmd. Without it every known command is
// allowed and every command is known.
type ACLChecker interface {
	// ACLCheck reports whether the command exists and whether the user
	// running the script may call it with these arguments.
	ACLCheck(args [][]byte) (known, allowed bool)
}

// Error texts a Host returns for the checks Redis makes before it runs a
// command for a script (script.c, scriptCall). They are given here so that
// every Host words them exactly as Redis 7.0 does.
const (
	ErrUnknownCommand   = "ERR Unknown Redis command called from script"
	ErrWrongArity       = "ERR Wrong number of args calling Redis command from script"
	ErrNotAllowed       = "ERR This Redis command is not allowed from script"
	ErrWriteFromRO      = "ERR Write commands are not allowed from read-only scripts."
	ErrCrossSlotKeys    = "ERR Script attempted to access keys that do not hash to the same slot"
	ErrNonLocalKey      = "ERR Script attempted to access a non local key in a cluster node"
	ErrNoScript         = "NOSCRIPT No matching script. Please use EVAL."
	compileErrorPrefix  = "ERR Error compiling script (new function): "
	scriptChunkName     = "user_script"  // what messages show ("user_script:1: ...")
	scriptChunkSource   = "@user_script" // what the error suffix shows
	defaultMaxStringLen = 512 << 20
)

// Limits bound one run. Every replica must run a script with the same
// Limits, or their results may differ.
type Limits struct {
	// MaxInstructions stops a run after this many Lua VM instructions with
	// the error reply BudgetErrorPrefix+"...", counting the work of library
	// calls in the same units (a pattern-matching step, 32 bytes built or
	// scanned, an element moved or compared: see meter). 0 means unlimited.
	MaxInstructions int64
	// Cancel, when closed, stops the run (SCRIPT KILL) with KilledErrorText.
	// A run that replicas must agree on never has one: only a leader's dry run
	// or a read may be killed.
	Cancel <-chan struct{}
	// MaxStringLen caps the strings string.rep, string.format,
	// string.gsub, table.concat and load may build (the script fails with
	// "resulting string too large" otherwise). 0 means DefaultMaxStringLen.
	MaxStringLen int
	// MaxAllocBytes stops a run once the process has allocated this many
	// bytes since the run started (runtime/metrics, read every few
	// instructions), with MemoryErrorPrefix+"...": a script that would build
	// gigabytes of strings is refused before it does. The count includes
	// other goroutines' allocations, so the outcome is not deterministic: only
	// for runs no replica repeats (a leader's dry run). 0 means no limit.
	MaxAllocBytes int64
}

// DefaultMaxStringLen is the string cap used when Limits.MaxStringLen is 0:
// 512 MiB, Redis's proto-max-bulk-len.
const DefaultMaxStringLen = defaultMaxStringLen

// Flags are the script flags of a "#!lua flags=..." shebang line (Redis 7).
type Flags uint8

// The script flags. FlagEvalCompat is set for a script without a shebang:
// Redis then ignores every flag and treats the script as it did before 7.0.
const (
	FlagNoWrites Flags = 1 << iota
	FlagAllowOOM
	FlagAllowStale
	FlagNoCluster
	FlagAllowCrossSlot
	FlagEvalCompat
)

// Engine runs scripts. It holds the script cache (SHA1 hex -> source and
// compiled function) and a pool of sandboxed interpreters. An Engine is safe
// for concurrent use: Load, Run and the rest may be called from several
// goroutines; each Run uses an interpreter of its own on the caller's
// goroutine. A run is deterministic: the same script with the same
// arguments, host replies and Limits gives the same result and the same
// sequence of host calls on every replica.
type Engine struct {
	mu      sync.RWMutex
	scripts map[string]*script
	poolMu  sync.Mutex
	idle    []*state // interpreters ready for a run
	logMu   sync.RWMutex
	logf    func(level int, msg string)
}

type script struct {
	sha     string
	src     []byte
	proto   *glua.FunctionProto
	flags   Flags
	bounded bool   // see Bounded
	growth  growth // a bounded script's: see MaxCommandBytes
	recipe  Recipe // see Engine.Recipe
}

// New returns an Engine with an empty script cache.
func New() *Engine {
	return &Engine{scripts: make(map[string]*script)}
}

// SetLogger routes redis.log to fn (level is one of the LOG_* numbers 0..3:
// debug, verbose, notice, warning). Without a logger redis.log only checks
// its arguments. fn is called on the goroutine running the script.
func (e *Engine) SetLogger(fn func(level int, msg string)) {
	e.logMu.Lock()
	e.logf = fn
	e.logMu.Unlock()
}

func (e *Engine) logger() func(int, string) {
	e.logMu.RLock()
	defer e.logMu.RUnlock()
	return e.logf
}

// SHA1Hex is the lower-case hex SHA1 of src: a script's name in the cache.
func SHA1Hex(src []byte) string {
	sum := sha1.Sum(src)
	return hex.EncodeToString(sum[:])
}

// Load compiles src and caches it under its SHA1, which it returns (EVAL and
// SCRIPT LOAD). A script already cached is not compiled again. A script that
// does not compile is not cached, and err's text is the whole Redis error
// reply, e.g. "ERR Error compiling script (new function): user_script:1:
// unexpected symbol near '<eof>'".
func (e *Engine) Load(src []byte) (sha string, err error) {
	sha = SHA1Hex(src)
	e.mu.RLock()
	_, ok := e.scripts[sha]
	e.mu.RUnlock()
	if ok {
		return sha, nil
	}
	body, flags, err := parseShebang(src)
	if err != nil {
		return "", err
	}
	chunk, msg := parseChunk(body, scriptChunkName)
	if msg != "" {
		return "", errors.New(compileErrorPrefix + msg)
	}
	bounded, grow := isBounded(chunk) // before compileChunk, which folds constants in chunk
	proto, msg := compileChunk(chunk, scriptChunkName)
	if msg != "" {
		return "", errors.New(compileErrorPrefix + msg)
	}
	bounded = bounded && boundedProto(proto)
	e.mu.Lock()
	if _, ok := e.scripts[sha]; !ok {
		e.scripts[sha] = &script{sha: sha, src: append([]byte(nil), src...), proto: proto, flags: flags, bounded: bounded, growth: grow, recipe: recipeOf(src)}
	}
	e.mu.Unlock()
	return sha, nil
}

func (e *Engine) lookup(sha string) *script {
	e.mu.RLock()
	s := e.scripts[strings.ToLower(sha)]
	e.mu.RUnlock()
	return s
}

// Exists reports whether a script is cached (sha in any case).
func (e *Engine) Exists(sha string) bool { return e.lookup(sha) != nil }

// Source returns a cached script's source (sha in any case).
func (e *Engine) Source(sha string) ([]byte, bool) {
	s := e.lookup(sha)
	if s == nil {
		return nil, false
	}
	return s.src, true
}

// Flags returns the shebang flags of a cached script.
func (e *Engine) Flags(sha string) (Flags, bool) {
	s := e.lookup(sha)
	if s == nil {
		return 0, false
	}
	return s.flags, true
}

// Bounded reports whether the cached script sha (any case) is statically
// bounded: no loops, no function definitions, calls only to redis.call,
// redis.pcall, redis.status_reply, redis.error_reply, tonumber, tostring
// and type, no access to other globals, `..` only over literals, KEYS and
// ARGV elements and numbers, and at most 4096 VM instructions. A run then
// executes each instruction at most once, and allocates at most its length
// times the size of its arguments and of the replies of the commands it
// calls: such a script need not be dry-run. A script with a shebang is
// classified on its body. False for a script not cached, and for any script
// the classification cannot prove bounded.
func (e *Engine) Bounded(sha string) bool {
	s := e.lookup(sha)
	return s != nil && s.bounded
}

// MaxCommandBytes bounds, for a bounded script (see Bounded) run with these
// KEYS and ARGV, the encoded size (command.Size) of any command it
// can send through redis.call or redis.pcall, counting every argument it
// builds from its arguments, its literals and numbers; a value read from the
// keyspace and passed on unchanged is not counted (a script may copy a
// stored value, as COPY may). It reports false for a script that is not
// cached or not bounded.
func (e *Engine) MaxCommandBytes(sha string, keys, argv [][]byte) (int64, bool) {
	s := e.lookup(sha)
	if s == nil || !s.bounded {
		return 0, false
	}
	longest := 0
	for _, a := range keys {
		longest = max(longest, len(a))
	}
	for _, a := range argv {
		longest = max(longest, len(a))
	}
	return s.growth.maxCommandBytes(longest), true
}

// Flush empties the script cache (SCRIPT FLUSH).
func (e *Engine) Flush() {
	e.mu.Lock()
	e.scripts = make(map[string]*script)
	e.mu.Unlock()
}

// Scripts returns a copy of the cache as sha -> source, for snapshots.
// Restore it by Loading every source.
func (e *Engine) Scripts() map[string][]byte {
	e.mu.RLock()
	defer e.mu.RUnlock()
	out := make(map[string][]byte, len(e.scripts))
	for sha, s := range e.scripts {
		out[sha] = s.src
	}
	return out
}

// Run runs the cached script sha (any case) with KEYS and ARGV, calling host
// for redis.call and redis.pcall, and returns its reply exactly as Redis 7.0
// would build it (errors included, with Redis's texts). An unknown sha gives
// ErrNoScript. host may be nil: every command is then unknown. Run is
// deterministic and runs entirely on the caller's goroutine. A panic in host is re-raised from Run after the interpreter has
// been cleaned up.
func (e *Engine) Run(sha string, keys, argv [][]byte, host Host, lim Limits) resp.Value {
	sc := e.lookup(sha)
	if sc == nil {
		return resp.Error(ErrNoScript)
	}
	st := e.getState()
	v, hostPanic := st.run(sc, keys, argv, host, lim, e.logger())
	e.putState(st)
	if hostPanic != nil {
		panic(hostPanic)
	}
	return v
}

// maxIdle is how many interpreters an Engine keeps between runs (each holds
// a fixed 1.6 MB call stack).
const maxIdle = 8

// maxIdleRegistry is the largest value stack (in slots) an idle
// interpreter may keep.
const maxIdleRegistry = 64 << 10

func (e *Engine) getState() *state {
	e.poolMu.Lock()
	if n := len(e.idle); n > 0 {
		st := e.idle[n-1]
		e.idle = e.idle[:n-1]
		e.poolMu.Unlock()
		return st
	}
	e.poolMu.Unlock()
	return newState()
}

func (e *Engine) putState(st *state) {
	if registryCap(st.L) > maxIdleRegistry {
		return // a run grew its value stack: let the memory go
	}
	e.poolMu.Lock()
	if len(e.idle) < maxIdle {
		e.idle = append(e.idle, st)
	}
	e.poolMu.Unlock()
}

// IsMemoryError reports whether v is the error reply of a run stopped by
// Limits.MaxAllocBytes.
func IsMemoryError(v resp.Value) bool {
	return v.Kind == resp.KindError && strings.HasPrefix(string(v.Str), MemoryErrorPrefix)
}

// IsBudgetError reports whether v is the error reply of a run stopped by
// Limits.MaxInstructions.
func IsBudgetError(v resp.Value) bool {
	return v.Kind == resp.KindError && strings.HasPrefix(string(v.Str), BudgetErrorPrefix)
}
