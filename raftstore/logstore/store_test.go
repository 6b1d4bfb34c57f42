package logstore

import (
	"bytes"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func TestEmptyStore(t *testing.T) {
	forEachMode(t, func(t *testing.T, s *Store) {
		assertBounds(t, s, 0, 0)
		var l raft.Log
		if err := s.GetLog(1, &l); err != raft.ErrLogNotFound {
			t.Fatalf("GetLog(1) on empty store = %v, want raft.ErrLogNotFound", err)
		}
	})
}

func TestStoreLogGetLogRoundTrip(t *testing.T) {
	forEachMode(t, func(t *testing.T, s *Store) {
		// On disk a 2 MiB entry is kept in the journal, and in a file of its
		// own once it moves to badger (entryfiles_test.go); in memory entries
		// are capped at 1 MiB.
		big := bytes.Repeat([]byte("0123456789abcdef"), (2<<20)/16)
		if s.sh.db.Opts().InMemory {
			big = big[:1<<20-2048]
		}
		cases := []*raft.Log{
			testLog(1),
			{Index: 2, Term: 3, Type: raft.LogCommand, Data: []byte("only data")},
			{Index: 3, Term: 3, Type: raft.LogNoop},
			{Index: 4, Term: 1 << 62, Type: raft.LogConfiguration, Data: []byte{0, 1, 2}, Extensions: []byte{0xff}},
			{Index: 5, Term: 4, Type: raft.LogBarrier, AppendedAt: time.Unix(0, 1)},
			{Index: 6, Term: 4, Type: raft.LogCommand, Data: big, Extensions: big[:1000], AppendedAt: time.Now()},
			{Index: 1<<64 - 1, Term: 1<<64 - 1, Type: raft.LogType(255), Data: []byte("max"),
				AppendedAt: time.Date(2200, 1, 2, 3, 4, 5, 6, time.UTC)},
		}
		for _, want := range cases {
			requireNoErr(t, s.StoreLog(want), "StoreLog")
		}
		assertBounds(t, s, 1, 1<<64-1)
		for _, want := range cases {
			// Reuse one struct with stale contents: GetLog must overwrite every field.
			got := raft.Log{Index: 99, Term: 99, Type: raft.LogBarrier, Data: []byte("stale"),
				Extensions: []byte("stale"), AppendedAt: time.Now()}
			requireNoErr(t, s.GetLog(want.Index, &got), "GetLog")
			assertLogEqual(t, want, &got)
		}
		// The returned slices belong to the caller.
		var a, b raft.Log
		requireNoErr(t, s.GetLog(1, &a), "GetLog")
		a.Data[0] ^= 0xff
		requireNoErr(t, s.GetLog(1, &b), "GetLog")
		assertLogEqual(t, testLog(1), &b)
	})
}

func TestStoreLogsGetLog(t *testing.T) {
	forEachMode(t, func(t *testing.T, s *Store) {
		requireNoErr(t, s.StoreLogs(testLogs(1, 10)), "StoreLogs")
		assertBounds(t, s, 1, 10)
		requireNoErr(t, s.StoreLogs(testLogs(11, 20)), "StoreLogs")
		assertBounds(t, s, 1, 20)
		assertHasLogs(t, s, 0, 21, func(i uint64) bool { return i >= 1 && i <= 20 })

		// Empty batch is a no-op.
		requireNoErr(t, s.StoreLogs(nil), "StoreLogs(nil)")
		assertBounds(t, s, 1, 20)

		// Overwriting an existing index replaces the entry.
		repl := &raft.Log{Index: 5, Term: 42, Type: raft.LogCommand, Data: []byte("replaced")}
		requireNoErr(t, s.StoreLog(repl), "StoreLog")
		var got raft.Log
		requireNoErr(t, s.GetLog(5, &got), "GetLog")
		assertLogEqual(t, repl, &got)
		assertBounds(t, s, 1, 20)

		// Entries need not be contiguous (raft leaves a gap after a snapshot restore).
		requireNoErr(t, s.StoreLogs(testLogs(100, 102)), "StoreLogs")
		assertBounds(t, s, 1, 102)
		if err := s.GetLog(50, &got); err != raft.ErrLogNotFound {
			t.Fatalf("GetLog(50) in gap = %v, want raft.ErrLogNotFound", err)
		}
	})
}

func TestStoreLogsRejectsIndexZero(t *testing.T) {
	forEachMode(t, func(t *testing.T, s *Store) {
		if err := s.StoreLogs([]*raft.Log{testLog(1), {Index: 0}}); err == nil {
			t.Fatal("StoreLogs with index 0 succeeded")
		}
		assertBounds(t, s, 0, 0) // nothing of the batch was written
	})
}

func TestGetLogMissing(t *testing.T) {
	forEachMode(t, func(t *testing.T, s *Store) {
		requireNoErr(t, s.StoreLogs(testLogs(10, 20)), "StoreLogs")
		for _, idx := range []uint64{0, 1, 9, 21, 1<<64 - 1} {
			var l raft.Log
			err := s.GetLog(idx, &l)
			if err != raft.ErrLogNotFound || !errors.Is(err, ErrLogNotFound) {
				t.Fatalf("GetLog(%d) = %v, want raft.ErrLogNotFound", idx, err)
			}
		}
	})
}

func TestDeleteRange(t *testing.T) {
	cases := []struct {
		name        string
		min, max    uint64
		first, last uint64 // expected bounds afterwards
	}{
		{"head", 1, 10, 11, 20},
		{"head partial overlap", 0, 5, 6, 20},
		{"tail", 15, 20, 1, 14},
		{"tail beyond last", 15, 1 << 40, 1, 14},
		{"middle", 5, 15, 1, 20},
		{"everything exact", 1, 20, 0, 0},
		{"everything wider", 0, 1<<64 - 1, 0, 0},
		{"single first", 1, 1, 2, 20},
		{"single last", 20, 20, 1, 19},
		{"below range", 0, 0, 1, 20},
		{"above range", 21, 30, 1, 20},
		{"min greater than max", 10, 5, 1, 20},
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					s := openStore(t, t.TempDir(), Options{InMemory: m.inMemory})
					requireNoErr(t, s.StoreLogs(testLogs(1, 20)), "StoreLogs")
					requireNoErr(t, s.DeleteRange(tc.min, tc.max), "DeleteRange")
					assertBounds(t, s, tc.first, tc.last)
					deleted := func(i uint64) bool { return tc.min <= tc.max && i >= tc.min && i <= tc.max }
					assertHasLogs(t, s, 0, 21, func(i uint64) bool { return i >= 1 && i <= 20 && !deleted(i) })
				})
			}
		})
	}
}

func TestDeleteRangeWithGapsAndRefill(t *testing.T) {
	forEachMode(t, func(t *testing.T, s *Store) {
		requireNoErr(t, s.StoreLogs(testLogs(1, 5)), "StoreLogs")
		requireNoErr(t, s.StoreLogs(testLogs(50, 55)), "StoreLogs")
		requireNoErr(t, s.StoreLogs(testLogs(100, 105)), "StoreLogs")

		// Deleting the head moves first to the next stored entry, across the gap.
		requireNoErr(t, s.DeleteRange(1, 10), "DeleteRange head")
		assertBounds(t, s, 50, 105)
		// Deleting the tail moves last back across the gap.
		requireNoErr(t, s.DeleteRange(60, 200), "DeleteRange tail")
		assertBounds(t, s, 50, 55)
		requireNoErr(t, s.DeleteRange(50, 55), "DeleteRange all")
		assertBounds(t, s, 0, 0)

		// The store is usable after being emptied.
		requireNoErr(t, s.StoreLogs(testLogs(7, 9)), "StoreLogs after emptying")
		assertBounds(t, s, 7, 9)
		assertHasLogs(t, s, 1, 110, func(i uint64) bool { return i >= 7 && i <= 9 })
	})
}

func TestDeleteRangeLarge(t *testing.T) {
	// More than deleteChunk entries, so the deletion spans several chunks.
	const n = 3*deleteChunk + 17
	forEachMode(t, func(t *testing.T, s *Store) {
		requireNoErr(t, s.StoreLogs(testLogs(1, n)), "StoreLogs")
		requireNoErr(t, s.DeleteRange(1, n-10), "DeleteRange")
		assertBounds(t, s, n-9, n)
		assertHasLogs(t, s, n-20, n, func(i uint64) bool { return i > n-10 })
		requireNoErr(t, s.DeleteRange(0, n), "DeleteRange rest")
		assertBounds(t, s, 0, 0)
	})
}

func TestStableStore(t *testing.T) {
	forEachMode(t, func(t *testing.T, s *Store) {
		// Missing keys: the exact "not found" text raft depends on.
		for _, key := range [][]byte{[]byte("missing"), nil} {
			v, err := s.Get(key)
			if err != ErrKeyNotFound || err.Error() != "not found" || v != nil {
				t.Fatalf("Get(%q) = %q, %v; want nil, ErrKeyNotFound", key, v, err)
			}
			u, err := s.GetUint64(key)
			if err != ErrKeyNotFound || err.Error() != "not found" || u != 0 {
				t.Fatalf("GetUint64(%q) = %d, %v; want 0, ErrKeyNotFound", key, u, err)
			}
		}

		requireNoErr(t, s.Set([]byte("k"), []byte("v1")), "Set")
		v, err := s.Get([]byte("k"))
		requireNoErr(t, err, "Get")
		if string(v) != "v1" {
			t.Fatalf("Get = %q, want v1", v)
		}
		requireNoErr(t, s.Set([]byte("k"), []byte("v2")), "Set overwrite")
		v, err = s.Get([]byte("k"))
		requireNoErr(t, err, "Get")
		if string(v) != "v2" {
			t.Fatalf("Get after overwrite = %q, want v2", v)
		}
		requireNoErr(t, s.Set([]byte("empty"), nil), "Set empty value")
		v, err = s.Get([]byte("empty"))
		if err != nil || len(v) != 0 {
			t.Fatalf("Get(empty) = %q, %v; want empty, nil", v, err)
		}

		for _, val := range []uint64{0, 1, 42, 1<<64 - 1} {
			requireNoErr(t, s.SetUint64([]byte("CurrentTerm"), val), "SetUint64")
			got, err := s.GetUint64([]byte("CurrentTerm"))
			requireNoErr(t, err, "GetUint64")
			if got != val {
				t.Fatalf("GetUint64 = %d, want %d", got, val)
			}
		}
		// A value that was not written by SetUint64 is reported as corrupt.
		if _, err := s.GetUint64([]byte("k")); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("GetUint64 of 2-byte value = %v, want ErrCorrupt", err)
		}

		// Stable keys and log entries live in separate keyspaces.
		requireNoErr(t, s.Set([]byte{prefixLog, 0, 0, 0, 0, 0, 0, 0, 1}, []byte("x")), "Set log-like key")
		requireNoErr(t, s.Set(bytes.Repeat([]byte{0xff}, 16), []byte("x")), "Set high key")
		assertBounds(t, s, 0, 0)
		var l raft.Log
		if err := s.GetLog(1, &l); err != raft.ErrLogNotFound {
			t.Fatalf("GetLog(1) = %v, want raft.ErrLogNotFound", err)
		}
		requireNoErr(t, s.StoreLogs(testLogs(3, 4)), "StoreLogs")
		if _, err := s.Get([]byte{0, 0, 0, 0, 0, 0, 0, 3}); err != ErrKeyNotFound {
			t.Fatalf("Get of log-like key = %v, want ErrKeyNotFound", err)
		}
	})
}

func TestPersistenceAcrossReopen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	requireNoErr(t, err, "Open")
	requireNoErr(t, s.StoreLogs(testLogs(1, 100)), "StoreLogs")
	requireNoErr(t, s.DeleteRange(1, 10), "DeleteRange head")
	requireNoErr(t, s.DeleteRange(91, 100), "DeleteRange tail")
	requireNoErr(t, s.Set([]byte("k"), []byte("v")), "Set")
	requireNoErr(t, s.SetUint64([]byte("CurrentTerm"), 7), "SetUint64")
	requireNoErr(t, s.Close(), "Close")

	s = openStore(t, dir, Options{})
	assertBounds(t, s, 11, 90) // recovered from disk by seeking
	assertHasLogs(t, s, 1, 100, func(i uint64) bool { return i >= 11 && i <= 90 })
	v, err := s.Get([]byte("k"))
	if err != nil || string(v) != "v" {
		t.Fatalf("Get after reopen = %q, %v", v, err)
	}
	term, err := s.GetUint64([]byte("CurrentTerm"))
	if err != nil || term != 7 {
		t.Fatalf("GetUint64 after reopen = %d, %v", term, err)
	}

	// Emptied store reopens empty.
	requireNoErr(t, s.DeleteRange(0, 1000), "DeleteRange all")
	requireNoErr(t, s.Close(), "Close")
	s = openStore(t, dir, Options{})
	assertBounds(t, s, 0, 0)
}

func TestInMemoryStoreDoesNotPersist(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{InMemory: true})
	requireNoErr(t, err, "Open")
	requireNoErr(t, s.StoreLogs(testLogs(1, 3)), "StoreLogs")
	requireNoErr(t, s.Close(), "Close")
	entries, err := os.ReadDir(dir)
	requireNoErr(t, err, "ReadDir")
	if len(entries) != 0 {
		t.Fatalf("in-memory store wrote %d files to %s", len(entries), dir)
	}
	s = openStore(t, dir, Options{InMemory: true})
	assertBounds(t, s, 0, 0)
}

// splitCount counts the debug records StoreLogs emits when it has to split a
// batch across transactions.
func splitCount(h *recordingHandler) int {
	return h.count(func(r slog.Record) bool { return strings.Contains(r.Message, "split across transactions") })
}

func TestStoreLogsLargeBatchOneTransaction(t *testing.T) {
	const n = 10_000
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			h := &recordingHandler{}
			s := openStore(t, t.TempDir(), Options{InMemory: m.inMemory, Logger: slog.New(h)})
			requireNoErr(t, s.StoreLogs(testLogs(1, n)), "StoreLogs")
			if c := splitCount(h); c != 0 {
				t.Fatalf("a batch of %d small logs was split across transactions", n)
			}
			assertBounds(t, s, 1, n)
			assertHasLogs(t, s, 0, n+1, func(i uint64) bool { return i >= 1 && i <= n })
		})
	}
}

func TestStoreLogsSplitsOversizedBatch(t *testing.T) {
	// 40 entries of 256 KiB: 10 MiB inline in the LSM tree, well over one
	// transaction's limit with a 16 MiB memtable.
	payload := bytes.Repeat([]byte{0xab}, 256<<10)
	logs := make([]*raft.Log, 40)
	for i := range logs {
		logs[i] = &raft.Log{Index: uint64(i) + 1, Term: 1, Type: raft.LogCommand, Data: payload,
			Extensions: []byte{byte(i)}}
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			h := &recordingHandler{}
			dir := t.TempDir()
			s, err := Open(dir, Options{InMemory: m.inMemory, Logger: slog.New(h)})
			requireNoErr(t, err, "Open")
			requireNoErr(t, s.StoreLogs(logs), "StoreLogs")
			requireNoErr(t, s.settle(), "settle") // badger trails the answered write (applier.go)
			// On disk the entries stay in the journal until Close moves them
			// into badger, in several transactions.
			if splits := splitCount(h); (m.inMemory && splits != 1) || (!m.inMemory && splits != 0) {
				t.Fatalf("the oversized batch was split %d times in badger", splits)
			}
			if !m.inMemory {
				requireNoErr(t, s.Close(), "Close")
				s = openStore(t, dir, Options{})
			} else {
				t.Cleanup(func() { s.Close() })
			}
			assertBounds(t, s, 1, 40)
			for _, want := range logs {
				var got raft.Log
				requireNoErr(t, s.GetLog(want.Index, &got), "GetLog")
				assertLogEqual(t, want, &got)
			}
		})
	}
}

func TestOpenErrors(t *testing.T) {
	t.Run("not a directory", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "file")
		requireNoErr(t, os.WriteFile(file, []byte("x"), 0o600), "WriteFile")
		s, err := Open(file, Options{})
		if err == nil {
			s.Close()
			t.Fatal("Open on a regular file succeeded")
		}
		if !strings.HasPrefix(err.Error(), "logstore: open "+file+": ") || !strings.Contains(err.Error(), "not a directory") {
			t.Fatalf("unexpected error: %v", err)
		}
		var pe *fs.PathError
		if !errors.As(err, &pe) {
			t.Fatalf("error does not wrap *fs.PathError: %v", err)
		}
	})

	t.Run("below a file", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "file")
		requireNoErr(t, os.WriteFile(file, []byte("x"), 0o600), "WriteFile")
		dir := filepath.Join(file, "sub")
		_, err := Open(dir, Options{})
		if err == nil || !strings.HasPrefix(err.Error(), "logstore: open "+dir+": ") {
			t.Fatalf("Open below a file = %v", err)
		}
	})

	t.Run("locked", func(t *testing.T) {
		dir := t.TempDir()
		first := openStore(t, dir, Options{})
		s, err := Open(dir, Options{})
		if err == nil {
			s.Close()
			t.Fatal("second Open of a locked directory succeeded")
		}
		if !errors.Is(err, ErrLocked) || !strings.HasPrefix(err.Error(), "logstore: open "+dir+": ") {
			t.Fatalf("unexpected error: %v", err)
		}
		// The first store is unaffected.
		requireNoErr(t, first.StoreLog(testLog(1)), "StoreLog on first store")
	})

	t.Run("no permission", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("running as root: permission bits are not enforced")
		}
		parent := t.TempDir()
		dir := filepath.Join(parent, "ro")
		requireNoErr(t, os.Mkdir(dir, 0o500), "Mkdir")
		t.Cleanup(func() { _ = os.Chmod(dir, 0o700) })
		s, err := Open(dir, Options{})
		if err == nil {
			s.Close()
			t.Fatal("Open of a read-only directory succeeded")
		}
		if !errors.Is(err, fs.ErrPermission) || !strings.HasPrefix(err.Error(), "logstore: open "+dir+": ") {
			t.Fatalf("unexpected error: %v", err)
		}
	})

	t.Run("empty name", func(t *testing.T) {
		if _, err := Open("", Options{}); err == nil {
			t.Fatal("Open(\"\") succeeded")
		}
	})
}

func TestClosedStore(t *testing.T) {
	forEachMode(t, func(t *testing.T, s *Store) {
		requireNoErr(t, s.StoreLogs(testLogs(1, 3)), "StoreLogs")
		requireNoErr(t, s.Close(), "Close")
		requireNoErr(t, s.Close(), "second Close")

		var l raft.Log
		_, errFirst := s.FirstIndex()
		_, errLast := s.LastIndex()
		_, errGet := s.Get([]byte("k"))
		_, errGetU := s.GetUint64([]byte("k"))
		for name, err := range map[string]error{
			"FirstIndex":  errFirst,
			"LastIndex":   errLast,
			"GetLog":      s.GetLog(1, &l),
			"StoreLog":    s.StoreLog(testLog(4)),
			"StoreLogs":   s.StoreLogs(testLogs(4, 5)),
			"DeleteRange": s.DeleteRange(1, 2),
			"Set":         s.Set([]byte("k"), []byte("v")),
			"SetUint64":   s.SetUint64([]byte("k"), 1),
			"Get":         errGet,
			"GetUint64":   errGetU,
		} {
			if !errors.Is(err, ErrClosed) {
				t.Errorf("%s after Close = %v, want ErrClosed", name, err)
			}
		}
	})
}

// TestConcurrentAccess mimics raft's use: one goroutine appends, another
// compacts the head, others read bounds and entries. Run with -race.
func TestConcurrentAccess(t *testing.T) {
	forEachMode(t, func(t *testing.T, s *Store) {
		const batches, batchSize = 200, 16
		var wg sync.WaitGroup
		done := make(chan struct{})
		errc := make(chan error, 8)

		wg.Add(1)
		go func() { // appender
			defer wg.Done()
			defer close(done)
			for b := range uint64(batches) {
				if err := s.StoreLogs(testLogs(b*batchSize+1, (b+1)*batchSize)); err != nil {
					errc <- err
					return
				}
			}
		}()
		wg.Add(1)
		go func() { // compactor: keep the last 50 entries
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				last, _ := s.LastIndex()
				if last > 50 {
					if err := s.DeleteRange(0, last-50); err != nil {
						errc <- err
						return
					}
				}
			}
		}()
		for range 3 {
			wg.Add(1)
			go func() { // readers
				defer wg.Done()
				for {
					select {
					case <-done:
						return
					default:
					}
					first, _ := s.FirstIndex()
					last, _ := s.LastIndex()
					if first == 0 {
						continue
					}
					var l raft.Log
					// The entry may be compacted between reading the bounds and the get.
					if err := s.GetLog(last, &l); err == nil {
						if l.Index != last {
							errc <- errors.New("GetLog returned the wrong entry")
							return
						}
					} else if err != raft.ErrLogNotFound {
						errc <- err
						return
					}
					_ = first
				}
			}()
		}
		wg.Wait()
		close(errc)
		for err := range errc {
			t.Fatal(err)
		}
		const total = batches * batchSize
		first, _ := s.FirstIndex()
		if last, _ := s.LastIndex(); last != total || first < 1 || first > total {
			t.Fatalf("bounds after concurrent run = [%d, %d]", first, last)
		}
		assertHasLogs(t, s, first, total, func(uint64) bool { return true })
	})
}

func TestBadgerLogsRoutedToSlog(t *testing.T) {
	h := &recordingHandler{}
	s, err := Open(t.TempDir(), Options{Logger: slog.New(h)})
	requireNoErr(t, err, "Open")
	requireNoErr(t, s.StoreLogs(testLogs(1, 10)), "StoreLogs")
	requireNoErr(t, s.Close(), "Close")
	n := h.count(func(r slog.Record) bool {
		v, ok := recordAttr(r, "component")
		return ok && v.String() == "badger"
	})
	if n == 0 {
		t.Fatal("no badger log records reached the slog logger")
	}
	// Badger's info chatter is demoted to debug.
	if h.count(func(r slog.Record) bool {
		v, ok := recordAttr(r, "component")
		return ok && v.String() == "badger" && r.Level == slog.LevelInfo
	}) != 0 {
		t.Fatal("badger info output logged at slog info level")
	}
}

func TestBadgerLoggerLevels(t *testing.T) {
	h := &recordingHandler{}
	l := badgerLogger{l: slog.New(h)}
	l.Errorf("e %d", 1)
	l.Warningf("w %d\n", 2)
	l.Infof("i")
	l.Debugf("d")
	l.Infof("\n") // blank messages are dropped
	// The cache monitor's minutely report (badger's own formats) is debug.
	l.Warningf("%s might be too small. Metrics: %s\n", "Block cache", "hit: 1 miss: 9")
	l.Warningf("Cache life expectancy (in seconds): %+v\n", "histogram")
	want := []struct {
		level slog.Level
		msg   string
	}{{slog.LevelError, "e 1"}, {slog.LevelWarn, "w 2"}, {slog.LevelDebug, "i"}, {slog.LevelDebug, "d"},
		{slog.LevelDebug, "Block cache might be too small. Metrics: hit: 1 miss: 9"},
		{slog.LevelDebug, "Cache life expectancy (in seconds): histogram"}}
	if len(h.records) != len(want) {
		t.Fatalf("got %d records, want %d", len(h.records), len(want))
	}
	for i, w := range want {
		if r := h.records[i]; r.Level != w.level || r.Message != w.msg {
			t.Errorf("record %d = %v %q, want %v %q", i, r.Level, r.Message, w.level, w.msg)
		}
	}
}

func TestStoreLogsRejectsOversizedEntry(t *testing.T) {
	forEachMode(t, func(t *testing.T, s *Store) {
		huge := &raft.Log{Index: 2, Term: 1, Type: raft.LogCommand, Data: make([]byte, s.sh.maxValue)}
		err := s.StoreLogs([]*raft.Log{testLog(1), huge})
		if !errors.Is(err, ErrEntryTooLarge) {
			t.Fatalf("StoreLogs of a %d-byte entry = %v, want ErrEntryTooLarge", len(huge.Data), err)
		}
		assertBounds(t, s, 0, 0) // nothing of the batch was written
	})
}
