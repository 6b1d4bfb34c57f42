package command

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// splitFuzz turns fuzz input into an argument vector: arguments are separated
// by NUL or space, so the corpus stays readable.
func splitFuzz(s string) [][]byte {
	var out [][]byte
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == 0 || r == ' ' }) {
		out = append(out, []byte(f))
	}
	return out
}

// FuzzParse: argument parsing never panics, is pure (the same input parses to
// the same Op), and a parsed request survives the forwarding codec.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"SET k v NX PX 100 FENCE", "SET k v IFEQ x GET", "GETEX k PXAT 1", "EXPIRE k 10 NX GT",
		"EVAL s 1 k a", "EVALSHA abc -1", "LOCK.ACQUIRE n o PX 10 WAIT 5 LIMIT 3 REENTRANT", "LOCK.RELEASE n 9",
		"SESSION.OPEN TTL 10 NAME x", "NAMESPACE.SET p MAXTTL 5 RATE 0 SAFETY correctness", "SCAN 0 MATCH * COUNT 0",
		"ACL SETUSER u on >p ~k* +@all", "ACL DELUSER a b", "HSET h f v f2", "MSET a", "INCRBY k -9223372036854775808",
		"DELEX k IFDEQ zz", "FENCE k IFEQ v", "FLUSHALL ASYNC"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		args := splitFuzz(s)
		op, spec, err := Parse(args)
		op2, spec2, err2 := Parse(args)
		if fmt.Sprintf("%#v %v %v", op, spec, err) != fmt.Sprintf("%#v %v %v", op2, spec2, err2) {
			t.Fatalf("%q parses two ways", args)
		}
		if err != nil || spec == nil {
			return
		}
		reqs, derr := DecodeRequests(EncodeRequests([]Request{{Args: args, Op: op, Spec: spec}}))
		if derr != nil || len(reqs) != 1 || fmt.Sprintf("%#v", reqs[0].Op) != fmt.Sprintf("%#v", op) {
			t.Fatalf("%q: forwarded as %v (%v)", args, reqs, derr)
		}
		// ACL SETUSER rules never panic either, in both modes.
		if su, ok := op.(ACLSetUser); ok {
			SetUser(NewUser(string(su.Name)), su.Rules, true)
			SetUser(DefaultUser("pw"), su.Rules, false)
		}
	})
}

// FuzzDecode: the log-entry codec never panics on arbitrary bytes, and what it
// accepts encodes back to an entry that decodes the same.
func FuzzDecode(f *testing.F) {
	for _, e := range []Entry{
		{Kind: KindCommand, Time: 5, Wall: 1_700_000_000_000, Args: splitFuzz("SET k v PX 10")},
		{Kind: KindTick, Time: 1 << 40},
		{Kind: KindTx, Args: TxArgs(Tx{Watch: []Watched{{Key: []byte("w"), Version: 3}}, Cmds: [][][]byte{splitFuzz("INCR n")}})},
		{Kind: KindScript, Args: ScriptArgs(ScriptLoad{Source: []byte("return 1")})},
		{Kind: KindSessionExpire, Args: SessionExpireArgs(7)},
		{Kind: KindBatch, Args: BatchArgs([][][]byte{splitFuzz("SET k v"), splitFuzz("LOCK.RELEASE k 9")})},
	} {
		f.Add(e.Encode())
	}
	f.Add([]byte{1, 1, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := Decode(b)
		if err != nil {
			return
		}
		again, err := Decode(e.Encode())
		if err != nil || again.Kind != e.Kind || again.Time != e.Time || again.Wall != e.Wall || len(again.Args) != len(e.Args) {
			t.Fatalf("%x: re-encoded entry decodes as %+v (%v), want %+v", b, again, err, e)
		}
		for i := range e.Args {
			if !bytes.Equal(e.Args[i], again.Args[i]) {
				t.Fatalf("%x: argument %d changed", b, i)
			}
		}
		// What the FSM does with an entry's arguments never panics either.
		switch e.Kind {
		case KindTx:
			ParseTx(e.Args)
		case KindScript:
			ParseScriptArgs(e.Args)
		case KindSessionExpire:
			ParseSessionExpireArgs(e.Args)
		case KindCommand:
			Parse(e.Args)
		case KindBatch:
			if cmds, err := ParseBatch(e.Args); err == nil {
				for _, c := range cmds {
					Parse(c)
				}
			}
		}
	})
}
