// Package rdb reads and writes Redis's serialization format: the payloads of
// DUMP and RESTORE (one value, a 2-byte RDB version and a CRC64 footer) and
// whole RDB files, such as the body a master sends a replica at a full
// resync. It turns every encoding Redis up to 7.2 writes for strings, lists,
// sets, sorted sets and hashes into a Value that is independent of encoding,
// skips what lockd does not hold (streams, module values, functions), and
// writes DUMP payloads that Redis 7.0.15's RESTORE accepts, byte-equal to
// Redis's own DUMP wherever Redis's choice of encoding is deterministic and
// rdbcompression is off (see DESIGN.md).
//
// Decoding never panics, and a length that claims more than the input holds
// costs nothing: every length is checked against the bytes left (a payload)
// or grown only as bytes arrive (a stream). What the input does hold may
// still decode to far more than its size (LZF expands up to 88 times, a
// 2-byte listpack entry becomes an element of some 70 bytes): DecodeDumpLimit
// and NewReaderLimit charge every byte and element to a budget before they
// allocate it and stop with ErrTooLarge when it runs out.
package rdb

import (
	"errors"
	"fmt"
	"strconv"
)

// Version is the RDB version this package writes in DUMP footers and the
// highest a DUMP payload may carry: Redis 7.0's RDB_VERSION.
const Version = 10

// MaxReaderVersion is the highest RDB file version Reader accepts: 11, the
// version Redis 7.2 writes, whose only additions (set listpacks, type 20, and
// streams with consumer active times, type 21) are decoded or skipped here.
const MaxReaderVersion = 11

// Type is the kind of a Value: one of the five kinds lockd holds.
type Type uint8

// The kinds of Value.
const (
	String Type = iota
	List
	Set
	ZSet
	Hash
)

// String returns Redis's name of the type, as TYPE answers it.
func (t Type) String() string {
	switch t {
	case String:
		return "string"
	case List:
		return "list"
	case Set:
		return "set"
	case ZSet:
		return "zset"
	case Hash:
		return "hash"
	}
	return "Type(" + strconv.Itoa(int(t)) + ")"
}

// Member is one element of a sorted set.
type Member struct {
	Member []byte
	Score  float64
}

// Field is one field of a hash.
type Field struct {
	Field, Value []byte
}

// Value is one key's value, independent of any encoding. Only the field of
// its Type is set. Decoded values never alias the caller's input.
type Value struct {
	Type Type
	Str  []byte   // String
	List [][]byte // List, head first
	Set  [][]byte // Set, members distinct, in the payload's order
	ZSet []Member // ZSet, members distinct, in Redis's order: score, then member bytes
	Hash []Field  // Hash, fields distinct, in the payload's order
}

// Unsupported is the error for a value of a type lockd does not hold
// (streams, modules, …): Name is Redis's type name ("stream",
// "module:<name>" with the module type's 9-character name).
type Unsupported struct{ Name string }

// Error names the type.
func (u *Unsupported) Error() string {
	return "rdb: unsupported value type " + strconv.Quote(u.Name)
}

// ErrVersionOrChecksum is DecodeDump's error for a payload shorter than its
// footer, with an RDB version above Version, or with a CRC64 that does not
// match: the error RESTORE answers in that case, byte for byte.
var ErrVersionOrChecksum = errors.New("ERR DUMP payload version or checksum are wrong")

// ErrBadFormat is the error every malformed-input error of this package
// matches with errors.Is; its text is the error RESTORE answers for a payload
// whose footer is right but whose body Redis cannot load.
var ErrBadFormat = errors.New("ERR Bad data format")

// formatError is a malformed-input error: it says what was wrong and matches
// ErrBadFormat.
// It may wrap a further error (an *Unsupported).
type formatError struct {
	msg     string
	wrapped error
}

func (e *formatError) Error() string        { return "rdb: " + e.msg }
func (e *formatError) Is(target error) bool { return target == ErrBadFormat }
func (e *formatError) Unwrap() error        { return e.wrapped }

func errf(msg string, args ...any) error {
	if len(args) == 0 {
		return &formatError{msg: msg}
	}
	return &formatError{msg: fmt.Sprintf(msg, args...)}
}

// errEmpty marks a collection with no elements: RESTORE refuses it (Bad data
// format) and an RDB load skips the key, as Redis does.
var errEmpty = &formatError{msg: "empty collection"}

// RDB object types (rdb.h).
const (
	typeString           = 0
	typeList             = 1
	typeSet              = 2
	typeZSet             = 3
	typeHash             = 4
	typeZSet2            = 5
	typeModule           = 6
	typeModule2          = 7
	typeHashZipmap       = 9
	typeListZiplist      = 10
	typeSetIntset        = 11
	typeZSetZiplist      = 12
	typeHashZiplist      = 13
	typeListQuicklist    = 14
	typeStreamListpacks  = 15
	typeHashListpack     = 16
	typeZSetListpack     = 17
	typeListQuicklist2   = 18
	typeStreamListpacks2 = 19
	typeSetListpack      = 20
	typeStreamListpacks3 = 21
)

// RDB opcodes (rdb.h).
const (
	opFunction2    = 245
	opFunction     = 246
	opModuleAux    = 247
	opIdle         = 248
	opFreq         = 249
	opAux          = 250
	opResizeDB     = 251
	opExpireTimeMs = 252
	opExpireTime   = 253
	opSelectDB     = 254
	opEOF          = 255
)

// Length and string encodings (rdb.h).
const (
	len6     = 0
	len14    = 1
	len32    = 0x80
	len64    = 0x81
	lenEnc   = 3
	encInt8  = 0
	encInt16 = 1
	encInt32 = 2
	encLZF   = 3
)

// Quicklist node containers.
const (
	containerPlain  = 1
	containerPacked = 2
)

// Module value opcodes (rdb.h RDB_MODULE_OPCODE_*).
const (
	moduleOpEOF    = 0
	moduleOpSInt   = 1
	moduleOpUInt   = 2
	moduleOpFloat  = 3
	moduleOpDouble = 4
	moduleOpString = 5
)

// moduleName is the 9-character name packed in the top 54 bits of a module
// type id (6 bits a character), as Redis's moduleTypeNameByID spells it.
func moduleName(id uint64) string {
	const cset = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	var name [9]byte
	id >>= 10
	for j := 8; j >= 0; j-- {
		name[j] = cset[id&63]
		id >>= 6
	}
	return string(name[:])
}
