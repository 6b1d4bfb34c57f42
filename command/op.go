package command

// Op is one parsed keyspace command. The FSM executes Ops; nothing else does.
type Op interface{ isOp() }

// ExpireKind says how an Expiry is given.
type ExpireKind uint8

// Expiry forms.
const (
	ExpireNone    ExpireKind = iota // leave the TTL as the command's default (SET clears it)
	ExpireRel                       // Ms is a duration from now
	ExpireAbs                       // Ms is a Unix time in milliseconds
	ExpireKeep                      // KEEPTTL
	ExpirePersist                   // GETEX PERSIST: remove the TTL
)

// Expiry is a TTL option of SET or GETEX.
type Expiry struct {
	Kind ExpireKind
	Ms   int64
}

// CondKind is a Redis 8.4 value condition (IFEQ, IFNE, IFDEQ, IFDNE).
type CondKind uint8

// Value conditions.
const (
	CondNone     CondKind = iota
	CondEq                // IFEQ value
	CondNe                // IFNE value
	CondDigestEq          // IFDEQ digest
	CondDigestNe          // IFDNE digest
)

// Cond is a value condition with its operand.
type Cond struct {
	Kind CondKind
	Arg  []byte
}

// SetReply says how a SET-family command answers.
type SetReply uint8

// SET-family reply forms.
const (
	ReplyOK    SetReply = iota // +OK or nil (SET, SETEX, PSETEX)
	ReplyInt                   // :1 or :0 (SETNX)
	ReplyOld                   // the old value (SET ... GET)
	ReplyToken                 // the fencing token or nil (SET ... FENCE)
)

// Set is SET, SETNX, SETEX and PSETEX.
type Set struct {
	Cmd        string // the command's name, for error texts
	Key, Value []byte
	NX, XX     bool
	Cond       Cond
	Expire     Expiry
	Reply      SetReply
}

// Get is GET.
type Get struct{ Key []byte }

// Strlen is STRLEN key: the length of the string value (0 for a missing key).
type Strlen struct{ Key []byte }

// GetDel is GETDEL.
type GetDel struct{ Key []byte }

// GetEx is GETEX.
type GetEx struct {
	Cmd    string
	Key    []byte
	Expire Expiry // ExpireNone or ExpirePersist; a time is in ExpireOpt/ExpireArg
	// ExpireOpt ("ex", "px", "exat", "pxat") and ExpireArg are checked with
	// ParseExpiry after the key is found, as Redis 7 orders its errors.
	ExpireOpt string
	ExpireArg []byte
}

// Del is DEL and UNLINK.
type Del struct{ Keys [][]byte }

// Exists is EXISTS (a key named twice counts twice).
type Exists struct{ Keys [][]byte }

// Expire is EXPIRE, PEXPIRE, EXPIREAT and PEXPIREAT. Ms is a duration, or a Unix
// time in milliseconds when Abs is set.
type Expire struct {
	Cmd            string
	Key            []byte
	Ms             int64
	Abs            bool
	NX, XX, GT, LT bool
}

// TTL is TTL, PTTL, EXPIRETIME and PEXPIRETIME.
type TTL struct {
	Key    []byte
	Millis bool // PTTL, PEXPIRETIME
	Abs    bool // EXPIRETIME, PEXPIRETIME
}

// Persist is PERSIST.
type Persist struct{ Key []byte }

// Type is TYPE.
type Type struct{ Key []byte }

// DelEx is Redis 8.4's DELEX key [IFEQ|IFNE|IFDEQ|IFDNE v].
type DelEx struct {
	Key  []byte
	Cond Cond
}

// Digest is Redis 8.4's DIGEST key.
type Digest struct{ Key []byte }

// Incr is INCR, INCRBY, DECR and DECRBY.
type Incr struct {
	Key []byte
	By  int64
}

// MGet is MGET.
type MGet struct{ Keys [][]byte }

// MSet is MSET and MSETNX (NX).
type MSet struct {
	Pairs [][]byte // key, value, key, value...
	NX    bool
}

// GetRange is GETRANGE.
type GetRange struct {
	Key        []byte
	Start, End int64
}

// DBSize is DBSIZE.
type DBSize struct{}

// Keys is KEYS pattern.
type Keys struct{ Pattern []byte }

// Scan is SCAN cursor [MATCH p] [COUNT n] [TYPE t].
type Scan struct {
	Cursor uint64
	Match  []byte // nil = all
	Count  int64
	Type   []byte // nil = any
}

// FlushAll is FLUSHALL [ASYNC|SYNC].
type FlushAll struct{}

// Fence is FENCE key [IFEQ value]: the fencing token of the key's current value.
type Fence struct {
	Key  []byte
	IfEq []byte // nil = unconditional
}

// HSet is HSET, HSETNX (NX) and HMSET (ReplyOK).
type HSet struct {
	Key     []byte
	Pairs   [][]byte // field, value, field, value...
	NX      bool
	ReplyOK bool
}

// HDel is HDEL key field [field ...].
type HDel struct {
	Key    []byte
	Fields [][]byte
}

// HIncrBy is HINCRBY key field increment.
type HIncrBy struct {
	Key, Field []byte
	By         int64
}

// HGet is HGET key field.
type HGet struct{ Key, Field []byte }

// HMGet is HMGET key field [field ...].
type HMGet struct {
	Key    []byte
	Fields [][]byte
}

// HGetAll is HGETALL key.
type HGetAll struct{ Key []byte }

// HExists is HEXISTS key field.
type HExists struct{ Key, Field []byte }

// HLen is HLEN key.
type HLen struct{ Key []byte }

// HKeys is HKEYS key.
type HKeys struct{ Key []byte }

// HVals is HVALS key.
type HVals struct{ Key []byte }

// Publish is PUBLISH channel message: a message that every node delivers to its
// own subscribers once the entry commits.
type Publish struct{ Channel, Message []byte }

func (Publish) isOp() {}

// HashOp is a hash command: the FSM dispatches every one on its key.
type HashOp interface {
	Op
	HashKey() []byte
}

// HashKey implements HashOp.
func (o HSet) HashKey() []byte    { return o.Key }
func (o HDel) HashKey() []byte    { return o.Key }
func (o HIncrBy) HashKey() []byte { return o.Key }
func (o HGet) HashKey() []byte    { return o.Key }
func (o HMGet) HashKey() []byte   { return o.Key }
func (o HGetAll) HashKey() []byte { return o.Key }
func (o HExists) HashKey() []byte { return o.Key }
func (o HLen) HashKey() []byte    { return o.Key }
func (o HKeys) HashKey() []byte   { return o.Key }
func (o HVals) HashKey() []byte   { return o.Key }

func (HSet) isOp()     {}
func (HDel) isOp()     {}
func (HIncrBy) isOp()  {}
func (HGet) isOp()     {}
func (HMGet) isOp()    {}
func (HGetAll) isOp()  {}
func (HExists) isOp()  {}
func (HLen) isOp()     {}
func (HKeys) isOp()    {}
func (HVals) isOp()    {}
func (Set) isOp()      {}
func (Get) isOp()      {}
func (Strlen) isOp()   {}
func (GetDel) isOp()   {}
func (GetEx) isOp()    {}
func (Del) isOp()      {}
func (Exists) isOp()   {}
func (Expire) isOp()   {}
func (TTL) isOp()      {}
func (Persist) isOp()  {}
func (Type) isOp()     {}
func (DelEx) isOp()    {}
func (Digest) isOp()   {}
func (Incr) isOp()     {}
func (MGet) isOp()     {}
func (MSet) isOp()     {}
func (GetRange) isOp() {}
func (DBSize) isOp()   {}
func (Keys) isOp()     {}
func (Scan) isOp()     {}
func (FlushAll) isOp() {}
func (Fence) isOp()    {}

// Request is one client command on its way to the store: its arguments (what the
// log carries), the parsed Op and the command's Spec.
type Request struct {
	Args [][]byte
	Op   Op
	Spec *Spec
	// User is the user the request runs as: the front doors set it on every
	// client request, and it travels with a forwarded request. The leader
	// checks a forwarded request against the user's ACL, a session belongs to
	// the user who opened it (owners.go), and the commands that a restricted
	// user's script calls are checked against that user's ACL where the
	// script runs (KindScriptAs). "" is the store itself, or a request that a
	// node forwarded without its user (a node from before users travelled):
	// none of these checks apply to it.
	User string
}
