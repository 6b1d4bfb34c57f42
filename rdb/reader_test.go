package rdb

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// fillRedis builds, in r, keys of every type in DB 0 and DB 1, some with
// expiry times, a stream with a consumer group and pending entries, and a
// function library; it returns the keys per DB and their PEXPIRETIME.
func fillRedis(t *testing.T, c *resp) map[int]map[string]int64 {
	t.Helper()
	keys := map[int]map[string]int64{0: {}, 1: {}}
	run := func(db int, key string, cmds ...[]any) {
		for _, cmd := range cmds {
			c.must(t, cmd...)
		}
		keys[db][key] = -1
	}
	c.must(t, "SELECT", 0)
	run(0, "s", []any{"SET", "s", "hello"})
	run(0, "n", []any{"SET", "n", "-12345"})
	run(0, "big", []any{"SET", "big", strings.Repeat("ab", 1000)})
	var args []any
	for i := range 3000 {
		args = append(args, fmt.Sprintf("item-%d", i))
	}
	run(0, "l", append([]any{"RPUSH", "l"}, args...))
	run(0, "lp", []any{"LPUSH", "lp", "c", "b", "a", "1"})
	run(0, "si", []any{"SADD", "si", 3, 1, 2, 70000})
	run(0, "ss", []any{"SADD", "ss", "x", "y", "z"})
	run(0, "z", []any{"ZADD", "z", 1, "a", "2.5", "b", "-inf", "c"})
	args = nil
	for i := range 300 {
		args = append(args, strconv.Itoa(i), fmt.Sprintf("member-%d", i))
	}
	run(0, "zbig", append([]any{"ZADD", "zbig"}, args...))
	run(0, "h", []any{"HSET", "h", "f", "v", "n", 7})
	run(0, "hbig", []any{"HSET", "hbig", "f", strings.Repeat("v", 100)})
	run(0, "exp", []any{"SET", "exp", "soon"}, []any{"PEXPIREAT", "exp", 4102444800123})
	run(0, "expl", []any{"RPUSH", "expl", "a"}, []any{"PEXPIREAT", "expl", 4102444899999})
	for i := range 5 {
		c.must(t, "XADD", "st", "*", "field", i)
	}
	c.must(t, "XGROUP", "CREATE", "st", "g1", "0")
	c.must(t, "XREADGROUP", "GROUP", "g1", "alice", "COUNT", 2, "STREAMS", "st", ">")
	c.must(t, "XREADGROUP", "GROUP", "g1", "bob", "COUNT", 1, "STREAMS", "st", ">")
	c.must(t, "XGROUP", "CREATE", "st", "g2", "$")
	keys[0]["st"] = -1
	c.must(t, "FUNCTION", "LOAD", "#!lua name=mylib\nredis.register_function('f1', function() return 1 end)")
	c.must(t, "SELECT", 1)
	run(1, "s", []any{"SET", "s", "in db 1"})
	run(1, "h1", []any{"HSET", "h1", "a", "b"}, []any{"PEXPIREAT", "h1", 4102444800000})
	c.must(t, "SELECT", 0)
	for db, ks := range keys {
		c.must(t, "SELECT", db)
		for k := range ks {
			ks[k] = c.must(t, "PEXPIRETIME", k).(int64)
		}
	}
	c.must(t, "SELECT", 0)
	return keys
}

// checkRDB reads the RDB in data with Reader and checks every key against
// what Redis holds: value, DB, expiry, and the stream reported skipped.
func checkRDB(t *testing.T, c *resp, data []byte, keys map[int]map[string]int64) {
	t.Helper()
	br := bufio.NewReader(io.MultiReader(bytes.NewReader(data), strings.NewReader("TRAILER")))
	rd := NewReader(br)
	seen := map[string]bool{}
	for {
		e, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		id := fmt.Sprintf("%d/%s", e.DB, e.Key)
		if seen[id] {
			t.Fatalf("key %s twice", id)
		}
		seen[id] = true
		exp, ok := keys[e.DB][string(e.Key)]
		if !ok {
			t.Fatalf("unexpected key %s", id)
		}
		wantExp := exp
		if exp < 0 {
			wantExp = 0
		}
		if e.ExpireMs != wantExp {
			t.Errorf("%s: ExpireMs %d, want %d", id, e.ExpireMs, wantExp)
		}
		if string(e.Key) == "st" {
			if e.Skipped != "stream" {
				t.Errorf("stream: Skipped = %q", e.Skipped)
			}
			continue
		}
		if e.Skipped != "" {
			t.Fatalf("%s skipped as %q", id, e.Skipped)
		}
		c.must(t, "SELECT", e.DB)
		if want := fetch(t, c, string(e.Key)); !sameValue(e.Value, want) {
			t.Errorf("%s: read %s, Redis holds %s", id, show(e.Value), show(want))
		}
	}
	c.must(t, "SELECT", 0)
	for db, ks := range keys {
		for k := range ks {
			if !seen[fmt.Sprintf("%d/%s", db, k)] {
				t.Errorf("key %d/%s not read", db, k)
			}
		}
	}
	if _, err := rd.Next(); err != io.EOF {
		t.Errorf("Next after EOF = %v", err)
	}
	if rest, _ := io.ReadAll(br); string(rest) != "TRAILER" {
		t.Errorf("Reader read past the RDB: %q left", rest)
	}
	aux := rd.Aux()
	if aux["redis-ver"] != "7.0.15" || aux["redis-bits"] != "64" {
		t.Errorf("aux = %v", aux)
	}
	if rd.Version() != 10 {
		t.Errorf("version %d", rd.Version())
	}
}

// An RDB Redis wrote with SAVE, and one it sent over the replication
// protocol (redis-cli --rdb), read back key by key.
func TestReaderAgainstRedis(t *testing.T) {
	r := startRedis(t)
	c := r.connect(t)
	keys := fillRedis(t, c)

	c.must(t, "SAVE")
	saved, err := os.ReadFile(filepath.Join(r.dir, "dump.rdb"))
	if err != nil {
		t.Fatal(err)
	}
	t.Run("SAVE", func(t *testing.T) { checkRDB(t, c, saved, keys) })

	t.Run("replication", func(t *testing.T) {
		cli, err := exec.LookPath("redis-cli")
		if err != nil {
			t.Skip("no redis-cli")
		}
		host, port, _ := strings.Cut(r.addr, ":")
		c.must(t, "CONFIG", "SET", "repl-diskless-sync-delay", 0)
		file := filepath.Join(t.TempDir(), "repl.rdb")
		out, err := exec.Command(cli, "-h", host, "-p", port, "--rdb", file).CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli --rdb: %v: %s", err, out)
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		checkRDB(t, c, data, keys)
	})

	t.Run("no checksum", func(t *testing.T) {
		// rdbchecksum no (immutable at run time) writes a zero checksum,
		// which a load does not check (rdb.c rdbLoadRioWithLoadingCtx).
		data := bytes.Clone(saved)
		clear(data[len(data)-8:])
		checkRDB(t, c, data, keys)
	})

	t.Run("corrupt checksum", func(t *testing.T) {
		bad := bytes.Clone(saved)
		bad[len(bad)-1] ^= 0x55
		if err := readAll(bad); !errors.Is(err, ErrBadFormat) || !strings.Contains(err.Error(), "checksum") {
			t.Fatalf("corrupt checksum: %v", err)
		}
	})

	t.Run("truncated", func(t *testing.T) {
		for _, n := range []int{0, 5, 9, 20, len(saved) / 3, len(saved) / 2, len(saved) - 9, len(saved) - 1} {
			if err := readAll(saved[:n]); !errors.Is(err, ErrBadFormat) {
				t.Errorf("truncated at %d of %d: %v", n, len(saved), err)
			}
		}
	})
}

// readAll reads an RDB to its end and returns the first error (nil at EOF).
func readAll(data []byte) error {
	rd := NewReader(bytes.NewReader(data))
	for {
		_, err := rd.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
