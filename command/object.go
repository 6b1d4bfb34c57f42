package command

import (
	"bytes"
	"math"
	"strings"
)

// OBJECT and MEMORY: Redis's introspection containers. Both are keyspace rows
// (HandlerFSM): the container's parser reads the subcommand, so the front
// door serves them as it serves TYPE (a read, routed by the subcommand's key,
// group 0 for a subcommand without one), and the state machine answers them
// (raftstore/fsm/object.go). The subcommands have rows of their own, carrying
// their metadata and key specifications (COMMAND INFO object|encoding, ACL
// categories, the key CommandKeys and the router find through rowOf).

// ObjectSub is an OBJECT subcommand.
type ObjectSub uint8

// The OBJECT subcommands.
const (
	ObjectHelp     ObjectSub = iota // OBJECT HELP
	ObjectEncoding                  // OBJECT ENCODING key
	ObjectFreq                      // OBJECT FREQ key
	ObjectIdleTime                  // OBJECT IDLETIME key
	ObjectRefCount                  // OBJECT REFCOUNT key
)

// Object is OBJECT ENCODING|FREQ|IDLETIME|REFCOUNT key, or OBJECT HELP (Key
// nil).
type Object struct {
	Sub ObjectSub
	Key []byte
}

// MemorySub is a MEMORY subcommand.
type MemorySub uint8

// The MEMORY subcommands.
const (
	MemoryHelp        MemorySub = iota // MEMORY HELP
	MemoryUsage                        // MEMORY USAGE key [SAMPLES count]
	MemoryStats                        // MEMORY STATS
	MemoryDoctor                       // MEMORY DOCTOR
	MemoryMallocStats                  // MEMORY MALLOC-STATS
	MemoryPurge                        // MEMORY PURGE
)

// MemoryDefaultSamples is how many elements of a collection MEMORY USAGE
// looks at without SAMPLES (Redis's OBJ_COMPUTE_SIZE_DEF_SAMPLES).
const MemoryDefaultSamples = 5

// Memory is MEMORY USAGE key [SAMPLES count] (Key set) or one of MEMORY's
// subcommands without arguments. Samples is how many elements of a
// collection the estimate looks at, at least 1: SAMPLES 0 ("all") is
// math.MaxInt64.
type Memory struct {
	Sub     MemorySub
	Key     []byte
	Samples int64
}

func (Object) isOp() {}
func (Memory) isOp() {}

var objectSubs = map[string]ObjectSub{
	"help": ObjectHelp, "encoding": ObjectEncoding, "freq": ObjectFreq,
	"idletime": ObjectIdleTime, "refcount": ObjectRefCount,
}

var memorySubs = map[string]MemorySub{
	"help": MemoryHelp, "usage": MemoryUsage, "stats": MemoryStats,
	"doctor": MemoryDoctor, "malloc-stats": MemoryMallocStats, "purge": MemoryPurge,
}

// objectRows are OBJECT's and MEMORY's rows: the containers, whose parsers
// read every subcommand, and one row per subcommand with the same parser (a
// keyspace row needs one: a subcommand's arguments parse alike from either
// row).
var objectRows = func() []*Spec {
	var out []*Spec
	out = append(out, fsmRow("object", 0, RouteKeys, parseObject))
	for _, sub := range []string{"encoding", "freq", "help", "idletime", "refcount"} {
		out = append(out, fsmRow("object|"+sub, 0, RouteKeys, parseObject))
	}
	out = append(out, fsmRow("memory", 0, RouteKeys, parseMemory))
	for _, sub := range []string{"doctor", "help", "malloc-stats", "purge", "stats", "usage"} {
		out = append(out, fsmRow("memory|"+sub, 0, RouteKeys, parseMemory))
	}
	return out
}()

// subcommand finds the subcommand a[1] of container among subs, checking
// the arity of its row, with Redis's errors: "unknown subcommand" (the name
// as a C string cut at 128 bytes) and the subcommand's arity error
// ("object|encoding").
func subcommand[S ~uint8](container string, subs map[string]S, a [][]byte) (S, error) {
	name := ""
	if len(a[1]) <= len("malloc-stats") {
		name = strings.ToLower(string(a[1]))
	}
	sub, ok := subs[name]
	if !ok {
		arg := a[1]
		if i := bytes.IndexByte(arg, 0); i >= 0 {
			arg = arg[:i]
		}
		if len(arg) > 128 {
			arg = arg[:128]
		}
		return 0, Echo("ERR unknown subcommand '", arg, "'. Try "+strings.ToUpper(container)+" HELP.")
	}
	full := container + "|" + name
	// The subcommand's arity is its metadata's (its row's, which parsing
	// cannot name: the table is built from these parsers' rows).
	if s := (Spec{Arity: metaTable[full].Arity}); !s.CheckArity(len(a)) {
		return 0, ErrArity(full)
	}
	return sub, nil
}

// parseObject parses OBJECT's subcommands.
func parseObject(_ string, a [][]byte) (Op, error) {
	sub, err := subcommand("object", objectSubs, a)
	if err != nil {
		return nil, err
	}
	op := Object{Sub: sub}
	if sub != ObjectHelp {
		op.Key = a[2]
	}
	return op, nil
}

// parseMemory parses MEMORY's subcommands: USAGE's options as Redis reads
// them, before the key is looked up (a SAMPLES count that is no integer:
// ErrNotInt; a negative one, or any other word: ErrSyntax).
func parseMemory(_ string, a [][]byte) (Op, error) {
	sub, err := subcommand("memory", memorySubs, a)
	if err != nil {
		return nil, err
	}
	op := Memory{Sub: sub}
	if sub != MemoryUsage {
		return op, nil
	}
	op.Key, op.Samples = a[2], MemoryDefaultSamples
	for j := 3; j < len(a); j++ {
		if !EqualFold(a[j], "samples") || j+1 >= len(a) {
			return nil, ErrSyntax
		}
		n, ok := ParseInt(a[j+1])
		if !ok {
			return nil, ErrNotInt
		}
		if n < 0 {
			return nil, ErrSyntax
		}
		if n == 0 {
			n = math.MaxInt64
		}
		op.Samples = n
		j++
	}
	return op, nil
}

// keyspaceContainers are the keyspace rows with subcommands of their own
// (OBJECT, MEMORY), set once the table is built.
var keyspaceContainers = map[string]bool{}

func init() {
	for name, s := range rows {
		if c, _, ok := strings.Cut(name, "|"); ok && s.Handler == HandlerFSM {
			keyspaceContainers[c] = true
		}
	}
}

// Subcommand is the row the keyspace request args (spec is Lookup's row for
// args[0]) runs as, for what is decided by the subcommand in Redis (arity,
// ACL rules and categories, flags): the subcommand's row when spec is a
// container whose subcommands are keyspace rows (OBJECT ENCODING:
// "object|encoding"), ok false when args[1] names none of them (the
// container's parser answers Redis's "unknown subcommand"); spec itself for
// any other command, and for a container without a subcommand argument
// (whose arity error is the container's).
func Subcommand(spec *Spec, args [][]byte) (*Spec, bool) {
	if !keyspaceContainers[spec.Name] || len(args) < 2 {
		return spec, true
	}
	if len(args[1]) > 32 {
		return spec, false
	}
	sub, ok := rows[spec.Name+"|"+strings.ToLower(string(args[1]))]
	if !ok || sub.Handler != HandlerFSM {
		return spec, false
	}
	return sub, true
}
