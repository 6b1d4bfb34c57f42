package logstore

import (
	"bytes"
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/lockd/lockd/raftstore/logcodec"
)

// bigLog is entry index with n bytes of data that do not compress (badger
// compresses its tables), the same for the same index, and differ
// within an entry.
func bigLog(index uint64, n int) *raft.Log {
	data := make([]byte, n)
	rand.NewChaCha8([32]byte{byte(index), byte(index >> 8), byte(index >> 16)}).Read(data)
	return &raft.Log{Index: index, Term: 2, Type: raft.LogCommand, Data: data, AppendedAt: time.Unix(1_700_000_000, 0)}
}

// encodedLen is the size of l's value in the store.
func encodedLen(l *raft.Log) int { return len(logcodec.Append(nil, l)) }

// entryFileCount counts the entry files in badger's directory of st, an
// open store, once badger holds every write st answered.
func entryFileCount(t *testing.T, st *Store) int {
	t.Helper()
	requireNoErr(t, st.settle(), "settle")
	return entryFilesIn(t, st.sh.db.Opts().Dir)
}

// entryFilesIn counts the entry files in dir.
func entryFilesIn(t *testing.T, dir string) int {
	t.Helper()
	names, err := os.ReadDir(dir)
	requireNoErr(t, err, "read dir")
	n := 0
	for _, e := range names {
		if strings.HasPrefix(e.Name(), entryFilePrefix) {
			n++
		}
	}
	return n
}

// sizedLog is entry index of exactly size bytes in the store.
func sizedLog(index uint64, size int) *raft.Log {
	n := size
	for {
		l := bigLog(index, n)
		if d := encodedLen(l) - size; d != 0 {
			n -= d
			continue
		}
		return l
	}
}

// bigLogs are entries around the size from which an entry moves to a file
// of its own, and how many of them do.
func bigLogs() (logs []*raft.Log, files int) {
	sizes := []int{
		100,          // small
		bigValue - 1, // one byte short: stays in badger
		bigValue,     // a file
		3<<20 + 7,
		5<<20 + 1,
		100,
		bigValue + 1,
	}
	for i, n := range sizes {
		l := sizedLog(uint64(i+1), n)
		logs = append(logs, l)
		if n >= bigValue {
			files++
		}
	}
	return logs, files
}

// assertReads checks that st reads back each of logs, except the indexes
// gone, which it must not find.
func assertReads(t *testing.T, st *Store, logs []*raft.Log, gone func(uint64) bool) {
	t.Helper()
	for _, want := range logs {
		var got raft.Log
		err := st.GetLog(want.Index, &got)
		if gone(want.Index) {
			if !errors.Is(err, ErrLogNotFound) {
				t.Fatalf("GetLog(%d) after its deletion: %v", want.Index, err)
			}
			continue
		}
		requireNoErr(t, err, "GetLog")
		assertLogEqual(t, want, &got)
	}
}

// A log entry of badger's value threshold or more that moves from the
// journal into badger goes to a file of its own, not into badger's value
// log, and reads back whole, also after a restart; deleting it removes the
// file.
func TestLargeEntriesMoveToFiles(t *testing.T) { forEachJournalKind(t, testLargeEntriesMoveToFiles) }

func testLargeEntriesMoveToFiles(t *testing.T, open journalOpener) {
	dir := t.TempDir()
	logs, files := bigLogs()
	st, closeAll := open(t, dir)
	requireNoErr(t, st.StoreLogs(logs), "StoreLogs")
	if n, err := st.journal().Move(st.tail, 0, 0); err != nil || n != len(logs) {
		t.Fatalf("moved %d entries into badger (%v), want %d", n, err, len(logs))
	}
	if n := entryFileCount(t, st); n != files {
		t.Fatalf("%d entry files, want %d", n, files)
	}
	assertReads(t, st, logs, func(uint64) bool { return false })
	requireNoErr(t, closeAll(), "Close")
	if n := filesSize(t, dir, ".vlog"); n > 1<<20 {
		t.Fatalf("badger's value log holds %d bytes after moving %d large entries", n, len(logs))
	}

	again, closeAgain := open(t, dir)
	assertReads(t, again, logs, func(uint64) bool { return false })
	requireNoErr(t, again.DeleteRange(2, 4), "DeleteRange(2, 4)") // one small, two files
	if n := entryFileCount(t, again); n != files-2 {
		t.Fatalf("after deleting two entries in files, %d entry files, want %d", n, files-2)
	}
	assertReads(t, again, logs, func(i uint64) bool { return i >= 2 && i <= 4 })
	requireNoErr(t, again.DeleteRange(1, 7), "DeleteRange(1, 7)")
	if n := entryFileCount(t, again); n != 0 {
		t.Fatalf("an emptied log leaves %d entry files", n)
	}
	requireNoErr(t, closeAgain(), "Close")
}

// A crash after large entries moved into badger, before their journal file
// went, leaves them in both places; the open keeps the journal's and
// deletes badger's, files and all.
func TestEntryFilesInBothPlaces(t *testing.T) { forEachJournalKind(t, testEntryFilesInBoth) }

func testEntryFilesInBoth(t *testing.T, open journalOpener) {
	dir := t.TempDir()
	logs, files := bigLogs()
	st, closeAll := open(t, dir)
	requireNoErr(t, st.StoreLogs(logs), "StoreLogs")
	journalOnly := copyJournal(t, dir)
	dbDir := st.sh.db.Opts().Dir
	requireNoErr(t, closeAll(), "Close") // moves every entry into badger, removes the journal
	if n := entryFilesIn(t, dbDir); n != files {
		t.Fatalf("%d entry files after a clean stop, want %d", n, files)
	}
	if err := os.CopyFS(filepath.Join(dir, "journal"), os.DirFS(filepath.Join(journalOnly, "journal"))); err != nil {
		t.Fatal(err)
	}
	both, _ := open(t, dir)
	if n, f := badgerLogKeys(t, both), entryFileCount(t, both); n != 0 || f != 0 {
		t.Fatalf("badger still holds %d entries (%d in files) the journal holds", n, f)
	}
	assertReads(t, both, logs, func(uint64) bool { return false })
}

// An open removes the entry files no entry names (one written just before
// a crash, before its marker; one whose removal a crash cut short; a
// temporary one) and keeps the others; an entry whose file is damaged or
// missing reads as corrupt, not as another entry.
func TestEntryFilesSweptAndChecked(t *testing.T) {
	dir := t.TempDir()
	logs, files := bigLogs()
	st := openStore(t, dir, Options{})
	requireNoErr(t, st.StoreLogs(logs), "StoreLogs")
	requireNoErr(t, st.Close(), "Close")
	stray := []string{
		entryFileName(nil, 99),             // no such entry
		entryFileName(nil, 1),              // an entry badger holds whole
		entryFileName(groupPrefix(3), 3),   // another group's (none in this DB)
		entryFileName(nil, 3) + ".tmp",     // a write a crash cut short
		entryFilePrefix + "not-a-name.log", // not a name lockd writes
	}
	for _, name := range stray {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("stray"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	st = openStore(t, dir, Options{})
	if n := entryFileCount(t, st); n != files {
		t.Fatalf("after the open's sweep %d entry files, want %d", n, files)
	}
	assertReads(t, st, logs, func(uint64) bool { return false })

	// Damage one entry's file and remove another's.
	requireNoErr(t, os.WriteFile(filepath.Join(dir, entryFileName(nil, 4)), []byte("damaged"), 0o600), "damage")
	requireNoErr(t, os.Remove(filepath.Join(dir, entryFileName(nil, 5))), "remove")
	for _, i := range []uint64{4, 5} {
		var got raft.Log
		if err := st.GetLog(i, &got); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("GetLog(%d) with its file damaged or gone: %v, want ErrCorrupt", i, err)
		}
	}
}

// Large entries that pass through badger and are deleted give their disk
// space back: rounds of entries written, moved into badger by a clean
// stop, and deleted leave the store's directory about as large as one
// round, where badger's value log kept every one of them.
func TestLargeEntriesDiskReclaimed(t *testing.T) {
	const rounds, perRound, size = 8, 20, 3 << 19 // 8 × 30 MiB
	dir := t.TempDir()
	var next uint64 = 1
	for r := range rounds {
		st := openStore(t, dir, Options{})
		logs := make([]*raft.Log, perRound)
		for i := range logs {
			logs[i] = bigLog(next, size)
			next++
		}
		for _, l := range logs { // one at a time: a batch is bounded in bytes
			requireNoErr(t, st.StoreLogs([]*raft.Log{l}), "StoreLogs")
		}
		if r > 0 {
			requireNoErr(t, st.DeleteRange(1, logs[0].Index-1), "DeleteRange of the earlier rounds")
		}
		requireNoErr(t, st.Close(), "Close")
	}
	written := int64(rounds * perRound * size)
	used := filesSize(t, dir, "")
	t.Logf("%d MiB of large entries written, all but %d MiB deleted: the directory holds %d MiB", written>>20, int64(perRound*size)>>20, used>>20)
	if used >= written/3 {
		t.Fatalf("the directory holds %d MiB (value log %d MiB)", used>>20, filesSize(t, dir, ".vlog")>>20)
	}
	st := openStore(t, dir, Options{})
	assertBounds(t, st, next-perRound, next-1)
	var got raft.Log
	requireNoErr(t, st.GetLog(next-1, &got), "GetLog")
	if !bytes.Equal(got.Data, bigLog(next-1, size).Data) {
		t.Fatal("the newest entry reads back different")
	}
}

// filesSize is the size of the files under dir whose names end in suffix
// (badger truncates its value-log files to what they hold when it closes).
func filesSize(t *testing.T, dir, suffix string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, suffix) {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	})
	requireNoErr(t, err, "walk "+dir)
	return n
}
