package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestGeneratedFileIsCurrent fails when meta_redis.go is not what the
// generator makes of redisjson/ now: a JSON file or the generator changed
// without `go generate ./command`, or the file was edited by hand.
func TestGeneratedFileIsCurrent(t *testing.T) {
	want, err := generate(filepath.Join("..", "..", "redisjson"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join("..", "..", "meta_redis.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("command/meta_redis.go is stale: run go generate ./command")
	}
}

func rangeSpec(pos, last, step int, flags ...string) keySpec {
	return keySpec{begin: "index", index: pos, find: "range", lastKey: last, keyStep: step, flags: flags}
}

// TestLegacyRange checks the (first, last, step) triple and movablekeys
// against what Redis 7.0.15 reports for commands of each shape.
func TestLegacyRange(t *testing.T) {
	keynum := keySpec{begin: "index", index: 2, find: "keynum", keyNumIdx: 0, firstKey: 1, keyStep: 1}
	keyword := keySpec{begin: "keyword", keyword: "STREAMS", startFrom: 1, find: "range", lastKey: -1, keyStep: 1, limit: 2}
	for _, c := range []struct {
		name              string
		specs             []keySpec
		first, last, step int
		movable           bool
	}{
		{"no keys (PING)", nil, 0, 0, 0, false},
		{"one key (GET)", []keySpec{rangeSpec(1, 0, 1)}, 1, 1, 1, false},
		{"all to the end (DEL)", []keySpec{rangeSpec(1, -1, 1)}, 1, -1, 1, false},
		{"pairs (MSET)", []keySpec{rangeSpec(1, -1, 2)}, 1, -1, 2, false},
		{"one incomplete spec", []keySpec{rangeSpec(1, 0, 1, "RW", "incomplete")}, 1, 1, 1, true},
		{"keynum (EVAL)", []keySpec{keynum}, 0, 0, 0, true},
		{"two adjacent keys (RENAME)", []keySpec{rangeSpec(1, 0, 1), rangeSpec(2, 0, 1)}, 1, 2, 1, false},
		{"a gap (LMOVE-like with a gap)", []keySpec{rangeSpec(1, 0, 1), rangeSpec(3, 0, 1)}, 1, 1, 1, true},
		{"keys then the rest (negative wins)", []keySpec{rangeSpec(1, 0, 1), rangeSpec(2, -1, 1)}, 1, -1, 1, false},
		{"range then keynum (ZUNIONSTORE)", []keySpec{rangeSpec(1, 0, 1), keynum}, 1, 1, 1, true},
		{"keyword only (XREAD)", []keySpec{keyword}, 0, 0, 0, true},
		{"step 2 among several", []keySpec{rangeSpec(1, 0, 1), rangeSpec(2, -1, 2)}, 1, 1, 1, true},
	} {
		first, last, step, movable := legacyRange(c.specs)
		if first != c.first || last != c.last || step != c.step || movable != c.movable {
			t.Errorf("%s: got (%d, %d, %d) movable=%v, want (%d, %d, %d) movable=%v",
				c.name, first, last, step, movable, c.first, c.last, c.step, c.movable)
		}
	}
}

// TestResolve checks what Redis derives from a file: implicit ACL
// categories, the order and names of flags, hidden flags.
func TestResolve(t *testing.T) {
	arity := -3
	c, err := resolve("eval_ro", jsonCommand{
		Arity: &arity, Group: "scripting",
		CommandFlags:  []string{"NO_MANDATORY_KEYS", "STALE", "READONLY", "MAY_REPLICATE", "NOSCRIPT"},
		ACLCategories: []string{"SCRIPTING"},
		CommandTips:   []string{"REQUEST_POLICY:ALL_SHARDS"},
		DocFlags:      []string{"SYSCMD", "DEPRECATED"},
		KeySpecs: []jsonKeySpec{{
			Flags:       []string{"ACCESS", "RO"},
			BeginSearch: map[string]json.RawMessage{"index": json.RawMessage(`{"pos": 2}`)},
			FindKeys:    map[string]json.RawMessage{"keynum": json.RawMessage(`{"keynumidx": 0, "firstkey": 1, "step": 1}`)},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, got, want []string) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %q, want %q", what, got, want)
		}
	}
	check("flags", c.flags, []string{"readonly", "noscript", "stale", "no_mandatory_keys", "movablekeys"})
	check("categories (no @read for a script)", c.categories, []string{"@slow", "@scripting"})
	check("tips", c.tips, []string{"request_policy:all_shards"})
	check("doc flags", c.docFlags, []string{"deprecated", "syscmd"})
	check("key spec flags", c.keySpecs[0].flags, []string{"RO", "access"})

	arity = 2
	c, err = resolve("zadd", jsonCommand{Arity: &arity, Group: "sorted_set",
		CommandFlags: []string{"FAST", "ADMIN", "WRITE", "PUBSUB", "BLOCKING"}})
	if err != nil {
		t.Fatal(err)
	}
	check("implied categories", c.categories, []string{"@write", "@pubsub", "@admin", "@fast", "@blocking", "@dangerous"})
	if c.group != "sorted-set" {
		t.Errorf("group %q, want sorted-set", c.group)
	}

	for _, bad := range []jsonCommand{
		{Arity: &arity, Group: "string", CommandFlags: []string{"NOT_A_FLAG"}},
		{Arity: &arity, Group: "string", CommandFlags: []string{"ONLY_SENTINEL"}},
		{Arity: &arity, Group: "string", ACLCategories: []string{"NOPE"}},
		{Arity: &arity, Group: "nogroup"},
		{Group: "string"},
	} {
		if _, err := resolve("x", bad); err == nil {
			t.Errorf("resolve(%+v) accepted it", bad)
		}
	}
}

// TestLoadDirContainers checks that a subcommand takes its container's group
// and that one without its container's file is refused.
func TestLoadDirContainers(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("obj-help.json", `{"HELP": {"summary": "s", "since": "1.0.0", "group": "generic", "arity": 2, "container": "OBJ", "command_flags": ["LOADING"]}}`)
	if _, err := loadDir(dir); err == nil || !strings.Contains(err.Error(), "container") {
		t.Fatalf("a subcommand without its container: err = %v", err)
	}
	write("obj.json", `{"OBJ": {"summary": "c", "since": "1.0.0", "group": "generic", "arity": -2}}`)
	cmds, err := loadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(cmds) != 2 || cmds[0].name != "obj" || cmds[1].name != "obj|help" || cmds[1].group != "generic" {
		t.Fatalf("got %+v", cmds)
	}
	write("obj-help.json", `{"HELP": {"summary": "s", "since": "1.0.0", "group": "string", "arity": 2, "container": "OBJ"}}`)
	if _, err := loadDir(dir); err == nil {
		t.Fatal("a subcommand in another group than its container's was accepted")
	}
}
