package command

import (
	"math"
	"testing"
)

// TestParseObjectAndMemory: the containers' parsers read every subcommand,
// with Redis's errors for an unknown subcommand, a subcommand's arity and
// MEMORY USAGE's options.
func TestParseObjectAndMemory(t *testing.T) {
	ok := map[string]Op{
		"OBJECT ENCODING k":                  Object{Sub: ObjectEncoding, Key: []byte("k")},
		"object Refcount k":                  Object{Sub: ObjectRefCount, Key: []byte("k")},
		"OBJECT HELP":                        Object{Sub: ObjectHelp},
		"MEMORY USAGE k":                     Memory{Sub: MemoryUsage, Key: []byte("k"), Samples: MemoryDefaultSamples},
		"MEMORY USAGE k SAMPLES 0":           Memory{Sub: MemoryUsage, Key: []byte("k"), Samples: math.MaxInt64},
		"MEMORY USAGE k samples 3 SAMPLES 7": Memory{Sub: MemoryUsage, Key: []byte("k"), Samples: 7},
		"MEMORY malloc-stats":                Memory{Sub: MemoryMallocStats},
	}
	for in, want := range ok {
		op, spec, err := Parse(argv(in))
		if err != nil || spec == nil || spec.Handler != HandlerFSM || spec.Writes() {
			t.Errorf("%s: %v, %v", in, spec, err)
			continue
		}
		switch w := want.(type) {
		case Object:
			if g, is := op.(Object); !is || g.Sub != w.Sub || string(g.Key) != string(w.Key) {
				t.Errorf("%s: %#v", in, op)
			}
		case Memory:
			if g, is := op.(Memory); !is || g.Sub != w.Sub || string(g.Key) != string(w.Key) || g.Samples != w.Samples {
				t.Errorf("%s: %#v", in, op)
			}
		}
	}
	bad := map[string]string{
		"OBJECT":                     "ERR wrong number of arguments for 'object' command",
		"OBJECT NOSUCH k":            "ERR unknown subcommand 'NOSUCH'. Try OBJECT HELP.",
		"memory nosuch":              "ERR unknown subcommand 'nosuch'. Try MEMORY HELP.",
		"OBJECT ENCODING":            "ERR wrong number of arguments for 'object|encoding' command",
		"OBJECT HELP x":              "ERR wrong number of arguments for 'object|help' command",
		"MEMORY STATS x":             "ERR wrong number of arguments for 'memory|stats' command",
		"MEMORY USAGE":               "ERR wrong number of arguments for 'memory|usage' command",
		"MEMORY USAGE k SAMPLES":     "ERR syntax error",
		"MEMORY USAGE k SAMPLES -1":  "ERR syntax error",
		"MEMORY USAGE k SAMPLES x":   "ERR value is not an integer or out of range",
		"MEMORY USAGE k SAMPLES 1 x": "ERR syntax error",
	}
	for in, want := range bad {
		if _, _, err := Parse(argv(in)); err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
	a := [][]byte{[]byte("OBJECT"), append([]byte("x\x00"), make([]byte, 300)...)}
	if _, _, err := Parse(a); err == nil || err.Error() != "ERR unknown subcommand 'x'. Try OBJECT HELP." {
		t.Errorf("a subcommand with a NUL: %v", err)
	}
}

// TestObjectKeysAndSubcommand: the key is the subcommand's (routing, ACL
// key rules), and Subcommand finds the row Redis decides by.
func TestObjectKeysAndSubcommand(t *testing.T) {
	for in, want := range map[string]string{"OBJECT ENCODING k": "k", "MEMORY USAGE k SAMPLES 5": "k", "OBJECT HELP": "", "MEMORY STATS": ""} {
		keys := CommandKeys(argv(in))
		if want == "" && len(keys) != 0 || want != "" && (len(keys) != 1 || string(keys[0]) != want) {
			t.Errorf("%s: keys %q, want %q", in, keys, want)
		}
	}
	for in, want := range map[string]string{"OBJECT encoding k": "object|encoding", "MEMORY USAGE k": "memory|usage",
		"OBJECT": "object", "GET k": "get"} {
		a := argv(in)
		spec, _ := Lookup(a[0])
		if sub, ok := Subcommand(spec, a); !ok || sub.Name != want {
			t.Errorf("Subcommand(%s) = %v, %v", in, sub.Name, ok)
		}
	}
	a := argv("OBJECT NOSUCH k")
	spec, _ := Lookup(a[0])
	if _, ok := Subcommand(spec, a); ok {
		t.Errorf("Subcommand(OBJECT NOSUCH) found a row")
	}
}
