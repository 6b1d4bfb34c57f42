package logstore

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// mode selects how a test store is opened.
type mode struct {
	name     string
	inMemory bool
}

var modes = []mode{{"disk", false}, {"inmem", true}}

// forEachMode runs fn as a subtest against a fresh on-disk store and a fresh
// in-memory store.
func forEachMode(t *testing.T, fn func(t *testing.T, s *Store)) {
	t.Helper()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			fn(t, openStore(t, t.TempDir(), Options{InMemory: m.inMemory}))
		})
	}
}

// openStore opens a store and closes it when the test ends.
func openStore(t testing.TB, dir string, opts Options) *Store {
	t.Helper()
	return openWith(t, "Open", Open, dir, opts)
}

// openWith opens a store with open (named name in a failure) and closes it
// when the test ends.
func openWith(t testing.TB, name string, open func(string, Options) (*Store, error), dir string, opts Options) *Store {
	t.Helper()
	s, err := open(dir, opts)
	if err != nil {
		t.Fatalf("%s(%q): %v", name, dir, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// testLog returns a log entry with every field set to a value derived from
// idx.
func testLog(idx uint64) *raft.Log {
	return &raft.Log{
		Index:      idx,
		Term:       idx/7 + 1,
		Type:       raft.LogType(idx % 6),
		Data:       []byte(fmt.Sprintf("data-%d", idx)),
		Extensions: []byte(fmt.Sprintf("ext-%d", idx)),
		AppendedAt: time.Unix(1_700_000_000, int64(idx)*1000+7),
	}
}

func testLogs(from, to uint64) []*raft.Log {
	logs := make([]*raft.Log, 0, to-from+1)
	for i := from; i <= to; i++ {
		logs = append(logs, testLog(i))
	}
	return logs
}

func requireNoErr(t testing.TB, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func assertLogEqual(t testing.TB, want, got *raft.Log) {
	t.Helper()
	if got.Index != want.Index || got.Term != want.Term || got.Type != want.Type ||
		!bytes.Equal(got.Data, want.Data) || !bytes.Equal(got.Extensions, want.Extensions) ||
		!got.AppendedAt.Equal(want.AppendedAt) || got.AppendedAt.IsZero() != want.AppendedAt.IsZero() {
		t.Fatalf("log mismatch:\n got %+v\nwant %+v", got, want)
	}
}

func assertBounds(t testing.TB, s *Store, first, last uint64) {
	t.Helper()
	f, err := s.FirstIndex()
	requireNoErr(t, err, "FirstIndex")
	l, err := s.LastIndex()
	requireNoErr(t, err, "LastIndex")
	if f != first || l != last {
		t.Fatalf("bounds = [%d, %d], want [%d, %d]", f, l, first, last)
	}
}

// assertHasLogs checks that exactly the entries testLog(i) for i in want are
// readable among indexes [lo, hi].
func assertHasLogs(t testing.TB, s *Store, lo, hi uint64, want func(i uint64) bool) {
	t.Helper()
	for i := lo; i <= hi; i++ {
		var got raft.Log
		err := s.GetLog(i, &got)
		switch {
		case want(i) && err != nil:
			t.Fatalf("GetLog(%d): %v", i, err)
		case want(i):
			assertLogEqual(t, testLog(i), &got)
		case err != raft.ErrLogNotFound:
			t.Fatalf("GetLog(%d) = %v, want raft.ErrLogNotFound", i, err)
		}
	}
}

// recordingHandler is a slog.Handler that keeps every record.
type recordingHandler struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *recordingHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *recordingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r.Clone())
	return nil
}

func (h *recordingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordingHandler) WithGroup(string) slog.Handler      { return h }

// count returns how many records satisfy match.
func (h *recordingHandler) count(match func(slog.Record) bool) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, r := range h.records {
		if match(r) {
			n++
		}
	}
	return n
}

func recordAttr(r slog.Record, key string) (slog.Value, bool) {
	var v slog.Value
	found := false
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			v, found = a.Value, true
			return false
		}
		return true
	})
	return v, found
}

// openGroup opens a Shared in dir and its group 0; both are closed when tb
// ends (closing either earlier is fine: Close is idempotent).
func openGroup(tb testing.TB, dir string, opts Options) (*Shared, *Store) {
	tb.Helper()
	sh, err := OpenShared(dir, opts)
	if err != nil {
		tb.Fatal(err)
	}
	st, err := sh.Group(0, nil)
	if err != nil {
		sh.Close()
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		st.Close()
		sh.Close()
	})
	return sh, st
}

// reopenShared closes stores and sh, and opens the Shared in dir again.
func reopenShared(t *testing.T, dir string, sh *Shared, stores []*Store) *Shared {
	t.Helper()
	for _, st := range stores {
		st.Close()
	}
	if err := sh.Close(); err != nil {
		t.Fatal(err)
	}
	sh, err := OpenShared(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return sh
}

// openGroups opens a Shared in dir and the Stores of groups 0 to n-1.
func openGroups(t *testing.T, dir string, n int) (*Shared, []*Store) {
	t.Helper()
	sh, err := OpenShared(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	stores := make([]*Store, n)
	for g := range stores {
		if stores[g], err = sh.Group(g, nil); err != nil {
			t.Fatal(err)
		}
	}
	return sh, stores
}
