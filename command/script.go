package command

import (
	"crypto/sha1"
	"encoding/hex"
	"strings"
)

// Eval is EVAL, EVALSHA, EVAL_RO and EVALSHA_RO. EVAL carries the script's
// source (the log entry replicates it, and applying it fills every replica's
// script cache); EVALSHA carries only the SHA1, which every replica resolves in
// its replicated cache.
type Eval struct {
	Source []byte // nil for EVALSHA
	SHA    string // lower-case hex SHA1 of the script
	Keys   [][]byte
	Args   [][]byte
	RO     bool // EVAL_RO / EVALSHA_RO: write commands are refused
}

// ScriptLoad is SCRIPT LOAD script.
type ScriptLoad struct{ Source []byte }

// ScriptExists is SCRIPT EXISTS sha [sha ...].
type ScriptExists struct{ SHAs [][]byte }

// ScriptFlush is SCRIPT FLUSH [ASYNC|SYNC].
type ScriptFlush struct{}

func (Eval) isOp()         {}
func (ScriptLoad) isOp()   {}
func (ScriptExists) isOp() {}
func (ScriptFlush) isOp()  {}

// The SCRIPT subcommands are answered by the front door, which sends these
// operations to the store with their rows (ScriptLoadSpec, …: door.go).

// KindScript carries SCRIPT LOAD or SCRIPT FLUSH: a change to the replicated
// script cache. Its Args are ScriptArgs(op).
const KindScript Kind = 5

// ScriptArgs is the argument vector of a KindScript entry.
func ScriptArgs(op Op) [][]byte {
	switch op := op.(type) {
	case ScriptLoad:
		return [][]byte{[]byte("load"), op.Source}
	case ScriptFlush:
		return [][]byte{[]byte("flush")}
	}
	return nil
}

// ParseScriptArgs is the inverse of ScriptArgs.
func ParseScriptArgs(a [][]byte) (Op, error) {
	switch {
	case len(a) == 2 && string(a[0]) == "load":
		return ScriptLoad{Source: a[1]}, nil
	case len(a) == 1 && string(a[0]) == "flush":
		return ScriptFlush{}, nil
	}
	return nil, ErrCorrupt
}

// SHA1Hex is the script cache's key for a source: lower-case hex SHA1.
func SHA1Hex(src []byte) string {
	sum := sha1.Sum(src)
	return hex.EncodeToString(sum[:])
}

var scriptRows = []*Spec{
	fsmRow("eval", FlagWrite|FlagScript, RouteKeys, parseEval),
	fsmRow("evalsha", FlagWrite|FlagScript, RouteKeys, parseEval),
	// EVAL_RO fills the replicated script cache, so it goes through the log;
	// EVALSHA_RO is a read.
	fsmRow("eval_ro", FlagWrite|FlagScript, RouteKeys, parseEval),
	fsmRow("evalsha_ro", FlagScript, RouteKeys, parseEval),
}

// ErrNoScript is the reply to an EVALSHA whose script is not in the cache
// (lua.ErrNoScript's text, which this package cannot import).
const ErrNoScript Error = "NOSCRIPT No matching script. Please use EVAL."

// EVAL script numkeys [key ...] [arg ...] (and EVALSHA, EVAL_RO, EVALSHA_RO).
// An EVALSHA whose SHA is not 40 characters long is NOSCRIPT before its
// numkeys is read, as in Redis 7 (evalGenericCommand).
func parseEval(name string, a [][]byte) (Op, error) {
	sha := strings.HasPrefix(name, "evalsha")
	if sha && len(a[1]) != 40 {
		return nil, ErrNoScript
	}
	n, ok := ParseInt(a[2])
	if !ok {
		return nil, ErrNotInt
	}
	if n < 0 {
		return nil, Error("ERR Number of keys can't be negative")
	}
	if n > int64(len(a)-3) {
		return nil, Error("ERR Number of keys can't be greater than number of args")
	}
	op := Eval{Keys: a[3 : 3+n], Args: a[3+n:], RO: strings.HasSuffix(name, "_ro")}
	if sha {
		op.SHA = strings.ToLower(string(a[1]))
	} else {
		op.Source, op.SHA = a[1], SHA1Hex(a[1])
	}
	return op, nil
}
