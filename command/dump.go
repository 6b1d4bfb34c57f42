package command

import "strings"

// DUMP and RESTORE (issue 48): a key's value in Redis's serialization
// format (package rdb), out and in. The parsers check what Redis 7.0.15's
// restoreCommand checks before it looks the key up (the options, left to
// right); what it checks after (BUSYKEY, then the TTL, then the payload) is
// the FSM's (raftstore/fsm/dump.go), in that order.

// The RESTORE option errors, as Redis 7.0 words them.
const (
	errRestoreIdle Error = "ERR Invalid IDLETIME value, must be >= 0"
	errRestoreFreq Error = "ERR Invalid FREQ value, must be >= 0 and <= 255"
)

// Dump is DUMP key: the key's value as a DUMP payload, nil for a missing key.
type Dump struct{ Key []byte }

// Restore is RESTORE key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME
// seconds] [FREQ frequency]. TTL is kept raw: Redis checks it only after it
// found the key free (BUSYKEY comes first), so the FSM parses it. IDLETIME
// and FREQ are checked and dropped: lockd keeps no LRU or LFU data.
type Restore struct {
	Key     []byte
	TTL     []byte // milliseconds from now, or (AbsTTL) a Unix time in ms; 0 = no expiry
	Payload []byte // the DUMP payload, decoded by the FSM when applied
	Replace bool   // REPLACE: an existing key is overwritten, not BUSYKEY
	AbsTTL  bool   // ABSTTL
}

func (Dump) isOp()    {}
func (Restore) isOp() {}

// dumpRows are DUMP's and RESTORE's rows (HandlerFSM). RESTORE needs
// FeatureMigration (its entry is new to the log) and, as it may create a
// sorted set or a list, FeatureCollections.
var dumpRows = []*Spec{
	fsmRow("dump", 0, RouteKeys, func(_ string, a [][]byte) (Op, error) { return Dump{Key: a[1]}, nil }),
	fsmRow("restore", FlagWrite|FlagMigration|FlagCollection, RouteKeys, parseRestore),
}

// RESTORE key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME s] [FREQ f]
//
// As in Redis: options may repeat; IDLETIME and FREQ exclude each other (the
// second one named is a syntax error); an option missing its operand is a
// syntax error; a non-integer operand is ErrNotInt.
func parseRestore(_ string, a [][]byte) (Op, error) {
	op := Restore{Key: a[1], TTL: a[2], Payload: a[3]}
	idle, freq := false, false
	for j := 4; j < len(a); j++ {
		more := j+1 < len(a)
		switch opt := strings.ToLower(string(a[j])); {
		case opt == "replace":
			op.Replace = true
		case opt == "absttl":
			op.AbsTTL = true
		case opt == "idletime" && more && !freq:
			v, ok := ParseInt(a[j+1])
			if !ok {
				return nil, ErrNotInt
			}
			if v < 0 {
				return nil, errRestoreIdle
			}
			idle = true
			j++
		case opt == "freq" && more && !idle:
			v, ok := ParseInt(a[j+1])
			if !ok {
				return nil, ErrNotInt
			}
			if v < 0 || v > 255 {
				return nil, errRestoreFreq
			}
			freq = true
			j++
		default:
			return nil, ErrSyntax
		}
	}
	return op, nil
}
