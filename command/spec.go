package command

import (
	"bytes"
	"errors"
	"math"
	"strings"

	"github.com/lockd/lockd/outcome"
	"github.com/lockd/lockd/resp"
)

// Error is a command error whose text is exactly what Redis replies, prefix
// included ("ERR syntax error", "WRONGTYPE ...").
type Error string

func (e Error) Error() string { return string(e) }

// Echo is the Error prefix + arg + suffix worded as Redis's
// addReplyErrorFormat words an error that echoes an argument ("%s"): arg as a
// C string, cut at its first NUL byte, and CR and LF at the end of the text
// trimmed (inside it they are written as spaces, as for every error).
func Echo(prefix string, arg []byte, suffix string) Error {
	if i := bytes.IndexByte(arg, 0); i >= 0 {
		arg = arg[:i]
	}
	return Error(strings.TrimRight(prefix+string(arg)+suffix, "\r\n"))
}

// Reply is e as an error reply with its outcome: ErrNoSession and
// ErrWrongType name theirs (by identity); any other Error is the command's
// own answer (outcome.Done).
func (e Error) Reply() resp.Value {
	o := outcome.Done
	switch e {
	case ErrNoSession:
		o = outcome.NoSession
	case ErrWrongType:
		o = outcome.WrongType
	}
	return resp.Failed(o, string(e))
}

// Denied is a NOPERM refusal: the user may not run the command, or touch one
// of its keys, channels or sessions. Its text is Redis's; its reply's
// outcome is outcome.Denied.
type Denied string

func (e Denied) Error() string { return string(e) }

// Reply is e as an error reply (outcome.Denied).
func (e Denied) Reply() resp.Value { return resp.Failed(outcome.Denied, string(e)) }

// Replier is an error that knows its reply (Error, Denied, *Failure).
type Replier interface {
	error
	Reply() resp.Value
}

// Failure is an error that names its outcome: a request refused or cut short
// inside lockd (raftstore's ErrNotApplied, ErrUnknownOutcome, …). Its text is
// the reply a client sees.
type Failure struct {
	Outcome outcome.Outcome
	Text    string
}

func (f *Failure) Error() string { return f.Text }

// Reply is f as an error reply with its outcome.
func (f *Failure) Reply() resp.Value { return resp.Failed(f.Outcome, f.Text) }

// ErrorReply is err as an error reply: the reply of the Replier err is or
// wraps, with err's whole text (a wrapper's detail included), else err's text
// with outcome.Done. It is the one mapping from errors to replies.
func ErrorReply(err error) resp.Value {
	var r Replier
	if !errors.As(err, &r) {
		return resp.Error(err.Error())
	}
	v := r.Reply()
	if r != err {
		v.Str = []byte(err.Error())
	}
	return v
}

// The error texts shared by many commands, byte for byte as Redis 7 words them.
const (
	ErrSyntax    Error = "ERR syntax error"
	ErrNotInt    Error = "ERR value is not an integer or out of range"
	ErrWrongType Error = "WRONGTYPE Operation against a key holding the wrong kind of value"
	ErrOverflow  Error = "ERR increment or decrement would overflow"
)

// ErrArity is the wrong-number-of-arguments error for the named command.
func ErrArity(name string) Error {
	return Error("ERR wrong number of arguments for '" + strings.ToLower(name) + "' command")
}

func errExpire(name string) Error {
	return Error("ERR invalid expire time in '" + name + "' command")
}

// The keyspace commands' rows (HandlerFSM): parsed here, run by the FSM. The
// flags Redis also has come from the metadata (table.go, index).
var keyspaceRows = []*Spec{
	fsmRow("set", FlagWrite, RouteKeys, parseSet),
	fsmRow("setnx", FlagWrite, RouteKeys, func(_ string, a [][]byte) (Op, error) {
		return Set{Cmd: "setnx", Key: a[1], Value: a[2], NX: true, Reply: ReplyInt}, nil
	}),
	fsmRow("setex", FlagWrite, RouteKeys, parseSetEx),
	fsmRow("psetex", FlagWrite, RouteKeys, parseSetEx),
	fsmRow("get", 0, RouteKeys, func(_ string, a [][]byte) (Op, error) { return Get{Key: a[1]}, nil }),
	fsmRow("strlen", 0, RouteKeys, func(_ string, a [][]byte) (Op, error) { return Strlen{Key: a[1]}, nil }),
	fsmRow("getdel", FlagWrite, RouteKeys, func(_ string, a [][]byte) (Op, error) { return GetDel{Key: a[1]}, nil }),
	fsmRow("getex", FlagWrite, RouteKeys, parseGetEx),
	fsmRow("del", FlagWrite, RouteSplit, func(_ string, a [][]byte) (Op, error) { return Del{Keys: a[1:]}, nil }),
	fsmRow("unlink", FlagWrite, RouteSplit, func(_ string, a [][]byte) (Op, error) { return Del{Keys: a[1:]}, nil }),
	fsmRow("exists", 0, RouteSplit, func(_ string, a [][]byte) (Op, error) { return Exists{Keys: a[1:]}, nil }),
	fsmRow("expire", FlagWrite, RouteKeys, parseExpire),
	fsmRow("pexpire", FlagWrite, RouteKeys, parseExpire),
	fsmRow("expireat", FlagWrite, RouteKeys, parseExpire),
	fsmRow("pexpireat", FlagWrite, RouteKeys, parseExpire),
	fsmRow("ttl", 0, RouteKeys, parseTTL),
	fsmRow("pttl", 0, RouteKeys, parseTTL),
	fsmRow("expiretime", 0, RouteKeys, parseTTL),
	fsmRow("pexpiretime", 0, RouteKeys, parseTTL),
	fsmRow("persist", FlagWrite, RouteKeys, func(_ string, a [][]byte) (Op, error) { return Persist{Key: a[1]}, nil }),
	fsmRow("type", 0, RouteKeys, func(_ string, a [][]byte) (Op, error) { return Type{Key: a[1]}, nil }),
	fsmRow("delex", FlagWrite, RouteKeys, parseDelEx),
	fsmRow("digest", 0, RouteKeys, func(_ string, a [][]byte) (Op, error) { return Digest{Key: a[1]}, nil }),
	fsmRow("incr", FlagWrite, RouteKeys, func(_ string, a [][]byte) (Op, error) { return Incr{Key: a[1], By: 1}, nil }),
	fsmRow("decr", FlagWrite, RouteKeys, func(_ string, a [][]byte) (Op, error) { return Incr{Key: a[1], By: -1}, nil }),
	fsmRow("incrby", FlagWrite, RouteKeys, parseIncrBy),
	fsmRow("decrby", FlagWrite, RouteKeys, parseIncrBy),
	fsmRow("mget", 0, RouteSplit, func(_ string, a [][]byte) (Op, error) { return MGet{Keys: a[1:]}, nil }),
	fsmRow("mset", FlagWrite, RouteKeys, parseMSet),
	fsmRow("msetnx", FlagWrite, RouteKeys, parseMSet),
	fsmRow("getrange", 0, RouteKeys, parseGetRange),
	fsmRow("dbsize", 0, RouteCombine, func(string, [][]byte) (Op, error) { return DBSize{}, nil }),
	fsmRow("keys", 0, RouteCombine, func(_ string, a [][]byte) (Op, error) { return Keys{Pattern: a[1]}, nil }),
	fsmRow("scan", 0, RouteCombine, parseScan),
	fsmRow("flushall", FlagWrite, RouteEveryGroup, parseFlushAll),
	fsmRow("hset", FlagWrite, RouteKeys, parseHSet),
	fsmRow("hmset", FlagWrite, RouteKeys, parseHSet),
	fsmRow("hsetnx", FlagWrite, RouteKeys, func(_ string, a [][]byte) (Op, error) {
		return HSet{Key: a[1], Pairs: a[2:4], NX: true}, nil
	}),
	fsmRow("hdel", FlagWrite, RouteKeys, func(_ string, a [][]byte) (Op, error) { return HDel{Key: a[1], Fields: a[2:]}, nil }),
	fsmRow("hincrby", FlagWrite, RouteKeys, func(_ string, a [][]byte) (Op, error) {
		v, ok := ParseInt(a[3])
		if !ok {
			return nil, ErrNotInt
		}
		return HIncrBy{Key: a[1], Field: a[2], By: v}, nil
	}),
	fsmRow("hget", 0, RouteKeys, func(_ string, a [][]byte) (Op, error) { return HGet{Key: a[1], Field: a[2]}, nil }),
	fsmRow("hmget", 0, RouteKeys, func(_ string, a [][]byte) (Op, error) { return HMGet{Key: a[1], Fields: a[2:]}, nil }),
	fsmRow("hgetall", 0, RouteKeys, func(_ string, a [][]byte) (Op, error) { return HGetAll{Key: a[1]}, nil }),
	fsmRow("hexists", 0, RouteKeys, func(_ string, a [][]byte) (Op, error) { return HExists{Key: a[1], Field: a[2]}, nil }),
	fsmRow("hlen", 0, RouteKeys, func(_ string, a [][]byte) (Op, error) { return HLen{Key: a[1]}, nil }),
	fsmRow("hkeys", 0, RouteKeys, func(_ string, a [][]byte) (Op, error) { return HKeys{Key: a[1]}, nil }),
	fsmRow("hvals", 0, RouteKeys, func(_ string, a [][]byte) (Op, error) { return HVals{Key: a[1]}, nil }),
	// PUBLISH goes through group 0's log: every node delivers the message
	// to its own subscribers once the entry commits.
	fsmRow("publish", FlagWrite, RouteGroupZero,
		func(_ string, a [][]byte) (Op, error) { return Publish{Channel: a[1], Message: a[2]}, nil }),
	fsmRow("fence", 0, RouteKeys, parseFence),
}

// TTL key / PTTL / EXPIRETIME / PEXPIRETIME
func parseTTL(name string, a [][]byte) (Op, error) {
	return TTL{Key: a[1], Millis: name[0] == 'p', Abs: strings.HasSuffix(name, "time")}, nil
}

func eq(a []byte, s string) bool { return len(a) == len(s) && strings.EqualFold(string(a), s) }

// ParseExpiry checks the operand of a GETEX expire option (see GetEx).
func ParseExpiry(name, opt string, arg []byte) (Expiry, error) {
	return parseExpiryArg(name, opt, arg)
}

// parseExpiryArg reads the integer operand of EX/PX/EXAT/PXAT and checks it as
// Redis 7 does (positive; seconds that fit in milliseconds).
func parseExpiryArg(name string, opt string, arg []byte) (Expiry, error) {
	v, ok := ParseInt(arg)
	if !ok {
		return Expiry{}, ErrNotInt
	}
	secs := opt == "ex" || opt == "exat"
	if v <= 0 || (secs && v > math.MaxInt64/1000) {
		return Expiry{}, errExpire(name)
	}
	if secs {
		v *= 1000
	}
	if opt == "ex" || opt == "px" {
		return Expiry{Kind: ExpireRel, Ms: v}, nil
	}
	return Expiry{Kind: ExpireAbs, Ms: v}, nil
}

// SET key value [NX|XX|IFEQ v|IFNE v|IFDEQ d|IFDNE d] [GET] [EX s|PX ms|EXAT s|PXAT ms|KEEPTTL] [FENCE]
func parseSet(name string, a [][]byte) (Op, error) {
	op := Set{Cmd: name, Key: a[1], Value: a[2]}
	var exOpt string
	var exArg []byte
	get, fence := false, false
	for i := 3; i < len(a); i++ {
		opt := strings.ToLower(string(a[i]))
		hasNext := i+1 < len(a)
		switch {
		case opt == "nx" && !op.XX && op.Cond.Kind == CondNone:
			op.NX = true
		case opt == "xx" && !op.NX && op.Cond.Kind == CondNone:
			op.XX = true
		case opt == "get":
			get = true
		case opt == "fence":
			fence = true
		case opt == "keepttl" && (exOpt == "" || exOpt == opt):
			exOpt = opt
		case (opt == "ex" || opt == "px" || opt == "exat" || opt == "pxat") && (exOpt == "" || exOpt == opt) && hasNext:
			// As in Redis, the same option may be repeated; the last one wins.
			exOpt = opt
			i++
			exArg = a[i]
		case (opt == "ifeq" || opt == "ifne" || opt == "ifdeq" || opt == "ifdne") && !op.NX && !op.XX && op.Cond.Kind == CondNone && hasNext:
			op.Cond = Cond{Kind: condKind(opt), Arg: a[i+1]}
			i++
		default:
			return nil, ErrSyntax
		}
	}
	if get && fence {
		return nil, ErrSyntax
	}
	switch exOpt {
	case "keepttl":
		op.Expire.Kind = ExpireKeep
	case "":
	default:
		e, err := parseExpiryArg(name, exOpt, exArg)
		if err != nil {
			return nil, err
		}
		op.Expire = e
	}
	switch {
	case get:
		op.Reply = ReplyOld
	case fence:
		op.Reply = ReplyToken
	}
	return op, nil
}

func condKind(opt string) CondKind {
	switch opt {
	case "ifeq":
		return CondEq
	case "ifne":
		return CondNe
	case "ifdeq":
		return CondDigestEq
	}
	return CondDigestNe
}

// HSET key field value [field value ...] / HMSET
func parseHSet(name string, a [][]byte) (Op, error) {
	if len(a)%2 != 0 {
		return nil, ErrArity(name)
	}
	return HSet{Key: a[1], Pairs: a[2:], ReplyOK: name == "hmset"}, nil
}

// SETEX key seconds value / PSETEX key milliseconds value
func parseSetEx(name string, a [][]byte) (Op, error) {
	opt := "ex"
	if name == "psetex" {
		opt = "px"
	}
	e, err := parseExpiryArg(name, opt, a[2])
	if err != nil {
		return nil, err
	}
	return Set{Cmd: name, Key: a[1], Value: a[3], Expire: e}, nil
}

// GETEX key [EX s|PX ms|EXAT s|PXAT ms|PERSIST]
func parseGetEx(name string, a [][]byte) (Op, error) {
	op := GetEx{Cmd: name, Key: a[1]}
	var exOpt string
	var exArg []byte
	for i := 2; i < len(a); i++ {
		opt := strings.ToLower(string(a[i]))
		switch {
		case opt == "persist" && (exOpt == "" || exOpt == opt):
			exOpt = opt
		case (opt == "ex" || opt == "px" || opt == "exat" || opt == "pxat") && (exOpt == "" || exOpt == opt) && i+1 < len(a):
			exOpt = opt
			i++
			exArg = a[i]
		default:
			return nil, ErrSyntax
		}
	}
	switch exOpt {
	case "persist":
		op.Expire.Kind = ExpirePersist
	case "":
	default:
		// Redis checks the time only after finding a string under the key, so the
		// error (or the nil reply for a missing key) comes from the FSM.
		op.ExpireOpt, op.ExpireArg = exOpt, exArg
	}
	return op, nil
}

// EXPIRE key seconds [NX|XX|GT|LT] (and PEXPIRE, EXPIREAT, PEXPIREAT)
func parseExpire(name string, a [][]byte) (Op, error) {
	op := Expire{Cmd: name, Key: a[1], Abs: strings.HasSuffix(name, "at")}
	for _, o := range a[3:] {
		switch strings.ToLower(string(o)) {
		case "nx":
			op.NX = true
		case "xx":
			op.XX = true
		case "gt":
			op.GT = true
		case "lt":
			op.LT = true
		default:
			return nil, Echo("ERR Unsupported option ", o, "")
		}
	}
	if op.NX && (op.XX || op.GT || op.LT) {
		return nil, Error("ERR NX and XX, GT or LT options at the same time are not compatible")
	}
	if op.GT && op.LT {
		return nil, Error("ERR GT and LT options at the same time are not compatible")
	}
	v, ok := ParseInt(a[2])
	if !ok {
		return nil, ErrNotInt
	}
	if name[0] != 'p' {
		if v > math.MaxInt64/1000 || v < math.MinInt64/1000 {
			return nil, errExpire(name)
		}
		v *= 1000
	}
	op.Ms = v
	return op, nil
}

// DELEX key [IFEQ v|IFNE v|IFDEQ d|IFDNE d]
func parseDelEx(_ string, a [][]byte) (Op, error) {
	op := DelEx{Key: a[1]}
	switch len(a) {
	case 2:
	case 4:
		opt := strings.ToLower(string(a[2]))
		switch opt {
		case "ifeq", "ifne", "ifdeq", "ifdne":
			op.Cond = Cond{Kind: condKind(opt), Arg: a[3]}
		default:
			return nil, ErrSyntax
		}
	default:
		return nil, ErrSyntax
	}
	return op, nil
}

// INCRBY key increment / DECRBY key decrement
func parseIncrBy(name string, a [][]byte) (Op, error) {
	v, ok := ParseInt(a[2])
	if !ok {
		return nil, ErrNotInt
	}
	if name == "decrby" {
		if v == math.MinInt64 {
			return nil, Error("ERR decrement would overflow")
		}
		v = -v
	}
	return Incr{Key: a[1], By: v}, nil
}

// MSET key value [key value ...] / MSETNX
func parseMSet(name string, a [][]byte) (Op, error) {
	if len(a)%2 != 1 {
		return nil, ErrArity(name)
	}
	return MSet{Pairs: a[1:], NX: name == "msetnx"}, nil
}

// GETRANGE key start end
func parseGetRange(_ string, a [][]byte) (Op, error) {
	s, ok1 := ParseInt(a[2])
	e, ok2 := ParseInt(a[3])
	if !ok1 || !ok2 {
		return nil, ErrNotInt
	}
	return GetRange{Key: a[1], Start: s, End: e}, nil
}

// SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]
func parseScan(_ string, a [][]byte) (Op, error) {
	c, ok := ParseCursor(a[1])
	if !ok {
		return nil, Error("ERR invalid cursor")
	}
	op := Scan{Cursor: c, Count: 10}
	for i := 2; i < len(a); i++ {
		if i+1 >= len(a) {
			return nil, ErrSyntax
		}
		switch strings.ToLower(string(a[i])) {
		case "match":
			op.Match = a[i+1]
		case "count":
			n, ok := ParseInt(a[i+1])
			if !ok {
				return nil, ErrNotInt
			}
			if n < 1 {
				return nil, ErrSyntax
			}
			op.Count = n
		case "type":
			op.Type = a[i+1]
		default:
			return nil, ErrSyntax
		}
		i++
	}
	if op.Match != nil && bytes.Equal(op.Match, []byte("*")) {
		op.Match = nil
	}
	return op, nil
}

// FLUSHALL [ASYNC|SYNC]
func parseFlushAll(_ string, a [][]byte) (Op, error) {
	if len(a) > 2 || (len(a) == 2 && !eq(a[1], "async") && !eq(a[1], "sync")) {
		return nil, ErrSyntax
	}
	return FlushAll{}, nil
}

// FENCE key [IFEQ value]
func parseFence(_ string, a [][]byte) (Op, error) {
	switch {
	case len(a) == 2:
		return Fence{Key: a[1]}, nil
	case len(a) == 4 && eq(a[2], "ifeq"):
		return Fence{Key: a[1], IfEq: a[3]}, nil
	}
	return nil, ErrSyntax
}

// EqualFold reports whether a equals s, ignoring ASCII case.
func EqualFold(a []byte, s string) bool { return eq(a, s) }

// FirstKey returns the first key a request names (what namespace limits are
// checked against), or nil when it names none: a script's first declared key,
// else the argument at its row's legacy FirstKey.
func FirstKey(args [][]byte) []byte {
	if len(args) == 0 {
		return nil
	}
	name := strings.ToLower(string(args[0]))
	s, ok := rows[name]
	// FCALL and FCALL_RO are no commands of lockd, but their first key is
	// found as a script's, so that a namespace's limit applies to them too.
	if ok && s.RunsScript() || name == "fcall" || name == "fcall_ro" {
		if len(args) > 3 {
			if n, ok := ParseInt(args[2]); ok && n > 0 {
				return args[3]
			}
		}
		return nil
	}
	if !ok || s.Meta.FirstKey <= 0 || s.Meta.FirstKey >= len(args) {
		return nil
	}
	return args[s.Meta.FirstKey]
}
