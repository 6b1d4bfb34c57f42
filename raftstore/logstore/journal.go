package logstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/dgraph-io/badger/v4"
	"github.com/lockd/lockd/internal/durable"
	"github.com/lockd/lockd/raftstore/journal"
)

// Badger behind the journal.
//
// A Shared on disk runs badger without syncing and makes each write durable
// with the journal (package journal): one checksummed record and one
// fdatasync instead of badger's two msyncs per synced commit (~110 µs
// against ~212 µs for four small entries on the development VM; with the
// flushes out of the way a 3-node cluster ran 1.9x the cycles/s, issue 9).
// The committer appends each batch to the journal, and only then does the
// applier commit it to badger (its memtable and its own, unsynced, logs) —
// except for log entries, which stay in the journal's files, each group's
// in its tail. Badger so holds the stable store, the entries that outlived
// their journal file (the journal moves them: moveInto), and the deletions
// of those.
//
// This file is what the journal needs of badger: the replay of its records
// into badger and the tails (replayInto), the moves (moveInto), the
// checkpoint's sync of badger's files (syncFiles), and the removal, after
// the replay, of the log entries that a tail and badger both hold (dedupe).

// journalFileSize and journalKeepFiles are the journal's file size and how
// many full files it keeps while entries in them are in a tail: variables
// for tests only, read when a Shared opens.
var (
	journalFileSize  int64 = journal.DefaultFileSize
	journalKeepFiles       = journal.DefaultKeepFiles
)

// openJournalFor opens the journal of the badger DB in dir, replaying what it
// holds into db and into the tails it returns (replayInto, dedupe), and
// removing the entry files no entry names (sweepEntryFiles); its checkpoints
// call quiesce first and sync badger's files, and its moves go into db.
func openJournalFor(db *badger.DB, dir string, logger *slog.Logger, quiesce func() error) (*journal.Journal, *journal.Tails, error) {
	ts := journal.NewTails(keyIndex)
	replayed := 0
	jr, err := journal.Open(filepath.Join(dir, "journal"), journal.Config{
		FileSize:  journalFileSize,
		KeepFiles: journalKeepFiles,
		Tails:     ts,
		Replay:    replayInto(db, ts, &replayed),
		Sync:      func() error { return syncFiles(dir) },
		Quiesce:   quiesce,
		Move:      moveInto(db),
	})
	if err == nil {
		if err = dedupe(db, ts); err == nil {
			var swept int
			if swept, err = sweepEntryFiles(db, dir); swept > 0 {
				logger.Info("logstore: removed entry files no log entry names", "dir", dir, "files", swept)
			}
		}
		if err != nil {
			jr.Close()
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("logstore: open %s: %w", dir, err)
	}
	logger.Debug("logstore: journal replayed", "dir", dir, "keys", replayed)
	return jr, ts, nil
}

// keyIndex is the index of a log key (any prefix: the index is its last
// eight bytes).
func keyIndex(key []byte) uint64 { return binary.BigEndian.Uint64(key[len(key)-8:]) }

// prefixOf is the key prefix of group g's keys (-1: the Store of Open, whose
// keys are unprefixed). A group's id in the journal's Tails is g.
func prefixOf(g int) keyPrefix {
	if g < 0 {
		return nil
	}
	return groupPrefix(g)
}

// logKeyGroup tells whether key is a log key, and whose (-1: a Store of its
// own's).
func logKeyGroup(key []byte) (int, bool) {
	switch {
	case len(key) == logKeyLen && key[0] == prefixLog:
		return -1, true
	case len(key) == 2+logKeyLen && key[0] == 'g' && key[2] == prefixLog:
		return int(key[1]), true
	}
	return 0, false
}

// replayInto returns the journal replay's Replay for the Stores of ts, whose
// DB is db: each write goes where it went when it was made (a log write
// through its tail: Tail.Journaled), in order, except that a deletion of log
// entries also deletes them from badger, where a move may have put them
// before a crash. replayed counts the keys.
func replayInto(db *badger.DB, ts *journal.Tails, replayed *int) func([]*journal.Write) error {
	return func(ws []*journal.Write) error {
		var toDB []*journal.Write
		for _, w := range ws {
			*replayed += len(w.Keys)
			g, log, err := writeGroup(w)
			if err != nil {
				return err
			}
			if log {
				del, all := w.Del, w.Keys
				ts.Of(g).Journaled(w)
				if del {
					w.Keys = all
				}
			}
			if len(w.Keys) > 0 {
				toDB = append(toDB, w)
			}
		}
		_, err := writeBatch(db, toDB)
		return err
	}
}

// writeGroup tells whether w, a replayed write, is one of log keys, and
// whose: a Store's write is of one kind and one Store (StoreLogs,
// DeleteRange, Set).
func writeGroup(w *journal.Write) (g int, log bool, err error) {
	for i, k := range w.Keys {
		kg, kl := logKeyGroup(k)
		if i == 0 {
			g, log = kg, kl
		} else if kl != log || kg != g {
			return 0, false, fmt.Errorf("%w: a journal record's write mixes log keys of group %d and key %x", ErrCorrupt, g, k)
		}
	}
	return g, log, nil
}

// dedupe deletes from db the log entries that a tail of ts holds too: a
// crash between a move into badger and the removal of the entries' journal
// file leaves them in both, and a later deletion would find only the tail's
// copy. Called after the replay, before the Stores open.
func dedupe(db *badger.DB, ts *journal.Tails) error {
	var dup [][]byte
	for g, t := range ts.All() {
		first, ok := t.Seek(0, false)
		if !ok {
			continue
		}
		kp := prefixOf(g)
		err := db.View(func(txn *badger.Txn) error {
			it := txn.NewIterator(badger.IteratorOptions{Prefix: kp.logs()})
			defer it.Close()
			for it.Seek(kp.log(first)); it.Valid(); it.Next() {
				if idx, ok := kp.parseLog(it.Item().Key()); ok {
					if _, in := t.Get(idx); in {
						dup = append(dup, it.Item().KeyCopy(nil))
					}
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if len(dup) == 0 {
		return nil
	}
	_, err := writeBatch(db, []*journal.Write{{Keys: dup, Del: true}})
	return err
}

// moveInto returns the journal's Move into db: group g's entries idx, with
// their encoded values, written under g's log keys (writeBatch: a large one
// into a file of its own).
func moveInto(db *badger.DB) func(g int, idx []uint64, vals [][]byte) error {
	return func(g int, idx []uint64, vals [][]byte) error {
		kp := prefixOf(g)
		w := &journal.Write{Keys: make([][]byte, len(idx)), Vals: vals}
		for k, index := range idx {
			w.Keys[k] = kp.log(index)
		}
		_, err := writeBatch(db, []*journal.Write{w})
		return err
	}
}

// syncFiles fsyncs every regular file in dir, badger's directory, but the
// entry files (each synced when written: entryfiles.go), then dir itself: a
// journal checkpoint. Badger exposes no way to sync the write-ahead logs of
// memtables it has sealed but not yet flushed to tables, and syncing
// everything needs no knowledge of its file names. A file that badger
// deletes meanwhile (skipped) held nothing that is not in a table it synced
// first.
func syncFiles(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), entryFilePrefix) {
			continue
		}
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		err = f.Sync()
		f.Close()
		if err != nil {
			return fmt.Errorf("sync %s: %w", e.Name(), err)
		}
	}
	return durable.SyncDir(dir)
}
