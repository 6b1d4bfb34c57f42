// Package resp is the protocol-neutral reply model shared by every layer of lockd:
// the FSM and the script engine build Values, and the RESP front door renders them
// as RESP2 or RESP3 bytes. It imports nothing of lockd but outcome, and has no state.
package resp

import (
	"github.com/lockd/lockd/outcome"
	"math"
	"strconv"
	"unsafe"
)

// Kind says which RESP type a Value stands for.
type Kind uint8

// The kinds of reply. RESP3-only kinds degrade to their RESP2 form when rendered
// for a RESP2 connection, exactly as Redis does.
const (
	KindNull      Kind = iota // nil bulk in RESP2, `_` in RESP3
	KindNullArray             // nil array in RESP2, `_` in RESP3
	KindSimple                // +text
	KindError                 // -ERR text
	KindInt                   // :n
	KindBulk                  // $n bytes
	KindArray                 // *n
	KindMap                   // %n in RESP3, flat array in RESP2
	KindSet                   // ~n in RESP3, array in RESP2
	KindDouble                // ,f in RESP3, bulk in RESP2
	KindBool                  // #t/#f in RESP3, :1/:0 in RESP2
	KindVerbatim              // =n txt:... in RESP3, bulk in RESP2
	KindPush                  // >n in RESP3, array in RESP2
	// KindPairs is Elems taken two by two (a sorted set's member and score):
	// an array of 2-element arrays in RESP3, one flat array in RESP2, as
	// Redis 7 replies ZRANGE … WITHSCORES and ZPOPMIN with a count. The
	// binary codec carries it in its full form (fieldOf does not list it),
	// which every node's decoder accepts.
	KindPairs
)

// Value is one reply. Only the fields of its Kind are meaningful.
//
// Outcome is what became of the request inside lockd (outcome.Done unless
// set); it travels with the reply between lockd's layers and nodes, and no
// RESP encoding writes it. An error reply with an Outcome other than Done may
// use Int for the outcome's number (outcome.Queued, outcome.RateLimited).
type Value struct {
	Kind    Kind
	Outcome outcome.Outcome
	Str     []byte  // Simple, Error, Bulk, Verbatim
	Int     int64   // Int; Bool (0 or 1)
	Float   float64 // Double
	Elems   []Value // Array, Set, Push; Map as key, value, key, value...
}

// Constructors for the common replies.
var (
	OK        = Simple("OK")
	Nil       = Value{Kind: KindNull}
	NilArray  = Value{Kind: KindNullArray}
	Zero      = Int(0)
	One       = Int(1)
	EmptyList = Value{Kind: KindArray}
)

// Simple returns a simple-string reply.
func Simple(s string) Value { return Value{Kind: KindSimple, Str: []byte(s)} }

// Error returns an error reply. msg must carry its prefix ("ERR ...", "WRONGTYPE ...").
func Error(msg string) Value { return Value{Kind: KindError, Str: []byte(msg)} }

// Failed returns an error reply whose outcome is o: the text is what a
// client sees, o what lockd's own layers decide by.
func Failed(o outcome.Outcome, msg string) Value {
	return Value{Kind: KindError, Outcome: o, Str: []byte(msg)}
}

// Int returns an integer reply.
func Int(n int64) Value { return Value{Kind: KindInt, Int: n} }

// Bulk returns a bulk-string reply holding b (not copied).
func Bulk(b []byte) Value { return Value{Kind: KindBulk, Str: b} }

// BulkString returns a bulk-string reply holding a copy of s.
func BulkString(s string) Value { return Value{Kind: KindBulk, Str: []byte(s)} }

// BulkRef returns a bulk-string reply holding s's bytes without copying them,
// as Bulk does for a []byte: the reply's Str aliases s, so no one may modify
// it (nothing that renders, forwards or converts a reply does). For values
// read out of the keyspace, whose strings never change: a reply of many large
// values then costs its headers until it is rendered, and rendering is what
// the client output buffer limit bounds.
func BulkRef(s string) Value {
	return Value{Kind: KindBulk, Str: unsafe.Slice(unsafe.StringData(s), len(s))}
}

// Array returns an array reply.
func Array(elems ...Value) Value { return Value{Kind: KindArray, Elems: elems} }

// Map returns a map reply from alternating keys and values.
func Map(kv ...Value) Value { return Value{Kind: KindMap, Elems: kv} }

// Double returns a double reply.
func Double(f float64) Value { return Value{Kind: KindDouble, Float: f} }

// Bool returns a boolean reply.
func Bool(b bool) Value {
	if b {
		return Value{Kind: KindBool, Int: 1}
	}
	return Value{Kind: KindBool}
}

// Pairs returns a KindPairs reply from alternating members and scores.
func Pairs(elems ...Value) Value { return Value{Kind: KindPairs, Elems: elems} }

// Verbatim returns a verbatim-string reply of format "txt".
func Verbatim(s string) Value { return Value{Kind: KindVerbatim, Str: []byte(s)} }

// IsError reports whether v is an error reply.
func (v Value) IsError() bool { return v.Kind == KindError }

// String is the text of a Simple, Error, Bulk or Verbatim reply (for tests and logs).
func (v Value) String() string {
	switch v.Kind {
	case KindInt:
		return strconv.FormatInt(v.Int, 10)
	case KindNull, KindNullArray:
		return "(nil)"
	}
	return string(v.Str)
}

// Append renders v in the given protocol version (2 or 3) onto buf.
func Append(buf []byte, v Value, proto int) []byte {
	switch v.Kind {
	case KindNull:
		if proto >= 3 {
			return append(buf, "_\r\n"...)
		}
		return append(buf, "$-1\r\n"...)
	case KindNullArray:
		if proto >= 3 {
			return append(buf, "_\r\n"...)
		}
		return append(buf, "*-1\r\n"...)
	case KindSimple:
		return appendLine(buf, '+', v.Str)
	case KindError:
		return appendLine(buf, '-', v.Str)
	case KindInt:
		buf = append(buf, ':')
		buf = strconv.AppendInt(buf, v.Int, 10)
		return append(buf, '\r', '\n')
	case KindBulk:
		return AppendBulk(buf, v.Str)
	case KindArray:
		return appendAgg(buf, '*', v.Elems, proto)
	case KindSet:
		if proto >= 3 {
			return appendAgg(buf, '~', v.Elems, proto)
		}
		return appendAgg(buf, '*', v.Elems, proto)
	case KindPush:
		if proto >= 3 {
			return appendAgg(buf, '>', v.Elems, proto)
		}
		return appendAgg(buf, '*', v.Elems, proto)
	case KindPairs:
		if proto >= 3 {
			buf = append(buf, '*')
			buf = strconv.AppendInt(buf, int64(len(v.Elems)/2), 10)
			buf = append(buf, '\r', '\n')
			for i := 0; i+1 < len(v.Elems); i += 2 {
				buf = appendAgg(buf, '*', v.Elems[i:i+2], proto)
			}
			return buf
		}
		return appendAgg(buf, '*', v.Elems, proto)
	case KindMap:
		if proto >= 3 {
			buf = append(buf, '%')
			buf = strconv.AppendInt(buf, int64(len(v.Elems)/2), 10)
			buf = append(buf, '\r', '\n')
			for _, e := range v.Elems {
				buf = Append(buf, e, proto)
			}
			return buf
		}
		return appendAgg(buf, '*', v.Elems, proto)
	case KindDouble:
		s := FormatDouble(v.Float)
		if proto >= 3 {
			return appendLine(buf, ',', []byte(s))
		}
		return AppendBulk(buf, []byte(s))
	case KindBool:
		if proto >= 3 {
			if v.Int != 0 {
				return append(buf, "#t\r\n"...)
			}
			return append(buf, "#f\r\n"...)
		}
		buf = append(buf, ':')
		buf = strconv.AppendInt(buf, v.Int, 10)
		return append(buf, '\r', '\n')
	case KindVerbatim:
		if proto >= 3 {
			buf = append(buf, '=')
			buf = strconv.AppendInt(buf, int64(len(v.Str)+4), 10)
			buf = append(buf, "\r\ntxt:"...)
			buf = append(buf, v.Str...)
			return append(buf, '\r', '\n')
		}
		return AppendBulk(buf, v.Str)
	}
	return appendLine(buf, '-', []byte("ERR internal: unknown reply kind"))
}

// AppendBulk renders a bulk string.
func AppendBulk(buf, b []byte) []byte {
	buf = append(buf, '$')
	buf = strconv.AppendInt(buf, int64(len(b)), 10)
	buf = append(buf, '\r', '\n')
	buf = append(buf, b...)
	return append(buf, '\r', '\n')
}

func appendAgg(buf []byte, c byte, elems []Value, proto int) []byte {
	buf = append(buf, c)
	buf = strconv.AppendInt(buf, int64(len(elems)), 10)
	buf = append(buf, '\r', '\n')
	for _, e := range elems {
		buf = Append(buf, e, proto)
	}
	return buf
}

// appendLine writes a one-line reply; CR and LF inside the text would break the
// framing, so they are replaced by spaces as Redis does for error strings.
func appendLine(buf []byte, c byte, s []byte) []byte {
	buf = append(buf, c)
	for _, b := range s {
		if b == '\r' || b == '\n' {
			b = ' '
		}
		buf = append(buf, b)
	}
	return append(buf, '\r', '\n')
}

// FormatDouble formats f as Redis 7 formats doubles ("%.17g", "inf", "-inf",
// "nan").
func FormatDouble(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	return strconv.FormatFloat(f, 'g', 17, 64)
}

// AppendCommand appends args to buf as a client sends a command: a RESP array
// of bulk strings.
func AppendCommand(buf []byte, args ...string) []byte {
	buf = append(buf, '*')
	buf = strconv.AppendInt(buf, int64(len(args)), 10)
	buf = append(buf, '\r', '\n')
	for _, a := range args {
		buf = append(buf, '$')
		buf = strconv.AppendInt(buf, int64(len(a)), 10)
		buf = append(buf, '\r', '\n')
		buf = append(buf, a...)
		buf = append(buf, '\r', '\n')
	}
	return buf
}
