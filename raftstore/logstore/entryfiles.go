package logstore

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/lockd/lockd/internal/durable"
	"github.com/lockd/lockd/raftstore/journal"
)

// Large log entries in badger are files of their own.
//
// Badger puts a value of its value threshold (1 MiB) or more into its value
// log, and gives that space back only by garbage-collecting value-log files,
// which needs discard statistics that only its LSM compactions gather; the
// deletions of old log entries (Raft's compaction after a snapshot) cause
// none, so every large entry that ever reached badger stayed on disk for
// good. Entries reach badger when their journal file is retired while they
// are still in the log (package journal) and at every clean stop (MoveAll), so a
// group writing large values leaked disk at each restart and, once its log
// outgrew the journal, all the time: a single node taking 1.5 MB values over
// 100 keys grew its value log by ~700 MB per 900 MB written (issue 9).
// Stored in the LSM tree instead (as chunks under the threshold), the same
// load ran at 0.4x the writes/s: every moved byte went through memtables,
// flushes and compactions on the way to its deletion.
//
// So a log entry whose encoding is bigValue bytes or more is written, where
// writes enter badger (writeBatch), to a file of its own in badger's
// directory (entryFileName), and its log key holds a short marker (size and
// CRC-32C) with UserMeta metaEntryFile. The file is fsynced when written
// (by the journal's rotator, which moves entries, or by a clean stop), and
// the entry's journal file goes only after a checkpoint, which fsyncs
// badger's files and the directory (syncFiles; it skips the entry files,
// synced once already, so that a checkpoint's cost does not grow with them).
// Deleting a log key whose value is such a marker removes the file once
// badger has the deletion; the journal holds the deletion, so a replay
// removes it again if a crash came first. An open removes the files that no
// marker names (written just before a crash, or whose removal a crash cut
// short).
const (
	// bigValue is the encoded size from which a log entry goes to a file,
	// and badger's value threshold (openDB sets it; 1 MiB is badger's
	// default and its largest): the size from which badger would put a
	// value into its value log.
	bigValue = 1 << 20

	// metaEntryFile is the UserMeta of a log key whose entry is in a file.
	metaEntryFile byte = 1

	// entryFileMarker starts the value of such a key. An encoded entry
	// starts with its logcodec version (1), never this.
	entryFileMarker byte = 0xC0

	entryFilePrefix = "entry-"
	entryFileSuffix = ".log"
)

// crcTable is CRC-32C's, the checksum of an entry file (its marker holds it).
var crcTable = crc32.MakeTable(crc32.Castagnoli)

// dbOp is one key of a badger write: its value, or its deletion.
type dbOp struct {
	key, val []byte
	meta     byte
	del      bool
}

// apply adds op to txn.
func (op dbOp) apply(txn *badger.Txn) error {
	if op.del {
		return txn.Delete(op.key)
	}
	if op.meta != 0 {
		return txn.SetEntry(badger.NewEntry(op.key, op.val).WithMeta(op.meta))
	}
	return txn.Set(op.key, op.val)
}

// badgerOps returns the badger writes of r, in order, and the entry files
// to remove once they are in badger: r's keys, each log value of bigValue
// bytes or more written to its file (here, before the marker that names it
// goes into badger) and replaced by the marker. For a deletion of log keys
// it reads db for the markers among them.
func badgerOps(db *badger.DB, r *journal.Write) (ops []dbOp, unlink []string, err error) {
	ops = make([]dbOp, 0, len(r.Keys))
	opts := db.Opts()
	onDisk := !opts.InMemory // in memory badger holds every value (it caps them at its threshold)
	if !r.Del {
		for i, k := range r.Keys {
			v := r.Value(i)
			kp, index, ok := splitLogKey(k)
			if len(v) < bigValue || !ok || !onDisk {
				ops = append(ops, dbOp{key: k, val: v})
				continue
			}
			if err := writeEntryFile(filepath.Join(opts.Dir, entryFileName(kp, index)), v); err != nil {
				return nil, nil, err
			}
			ops = append(ops, dbOp{key: k, val: entryFileValue(v), meta: metaEntryFile})
		}
		return ops, nil, nil
	}
	deleted := make(map[string][]uint64) // key prefix -> deleted log indexes
	for _, k := range r.Keys {
		ops = append(ops, dbOp{key: k, del: true})
		if kp, index, ok := splitLogKey(k); ok && onDisk {
			deleted[string(kp)] = append(deleted[string(kp)], index)
		}
	}
	for p, idx := range deleted {
		files, err := entryFiles(db, keyPrefix(p), idx)
		if err != nil {
			return nil, nil, err
		}
		for _, index := range files {
			unlink = append(unlink, filepath.Join(opts.Dir, entryFileName(keyPrefix(p), index)))
		}
	}
	return ops, unlink, nil
}

// splitLogKey returns the key prefix and index of a log key.
func splitLogKey(key []byte) (keyPrefix, uint64, bool) {
	g, ok := logKeyGroup(key)
	if !ok {
		return nil, 0, false
	}
	return prefixOf(g), keyIndex(key), true
}

// entryFiles returns which of the given log indexes under kp db holds as
// entry-file markers: one seek over the range they span, reading keys only.
func entryFiles(db *badger.DB, kp keyPrefix, indexes []uint64) ([]uint64, error) {
	slices.Sort(indexes)
	lo, hi := indexes[0], indexes[len(indexes)-1]
	var found []uint64
	err := db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: kp.logs()})
		defer it.Close()
		for it.Seek(kp.log(lo)); it.Valid(); it.Next() {
			index, ok := kp.parseLog(it.Item().Key())
			if !ok {
				return fmt.Errorf("%w: malformed log key %x", ErrCorrupt, it.Item().Key())
			}
			if index > hi {
				break
			}
			if it.Item().UserMeta() != metaEntryFile {
				continue
			}
			if _, in := slices.BinarySearch(indexes, index); in {
				found = append(found, index)
			}
		}
		return nil
	})
	return found, err
}

// entryFileName is the name, in badger's directory, of the file of the log
// entry with the given index under kp.
func entryFileName(kp keyPrefix, index uint64) string {
	return fmt.Sprintf("%s%s-%016x%s", entryFilePrefix, hex.EncodeToString(kp), index, entryFileSuffix)
}

// parseEntryFileName is entryFileName's inverse.
func parseEntryFileName(name string) (keyPrefix, uint64, bool) {
	rest, ok := strings.CutPrefix(name, entryFilePrefix)
	if !ok {
		return nil, 0, false
	}
	if rest, ok = strings.CutSuffix(rest, entryFileSuffix); !ok {
		return nil, 0, false
	}
	p, idx, ok := strings.Cut(rest, "-")
	if !ok || len(idx) != 16 {
		return nil, 0, false
	}
	kp, err := hex.DecodeString(p)
	if err != nil {
		return nil, 0, false
	}
	index, err := strconv.ParseUint(idx, 16, 64)
	if err != nil {
		return nil, 0, false
	}
	return kp, index, true
}

// writeEntryFile writes val to path and fsyncs it, through a temporary file
// renamed over path, so that path holds either an older entry or this one.
// The rename is made durable by the next checkpoint's sync of the directory
// (see the comment at the top).
func writeEntryFile(path string, val []byte) error {
	tmp := path + ".tmp"
	err := durable.WriteFile(tmp, val, 0o600)
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		return fmt.Errorf("write entry file: %w", err)
	}
	return nil
}

// removeEntryFiles removes the given entry files; one already gone is fine.
func removeEntryFiles(paths []string) error {
	for _, p := range paths {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove entry file: %w", err)
		}
	}
	return nil
}

// entryFileValue is the marker stored under the log key of val, an entry
// stored in a file: entryFileMarker, uvarint len(val), CRC-32C of val.
func entryFileValue(val []byte) []byte {
	b := binary.AppendUvarint([]byte{entryFileMarker}, uint64(len(val)))
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(val, crcTable))
}

// readEntryFile returns the entry with the given index under kp, which
// badger holds as the marker val, from its file in dir.
func readEntryFile(dir string, kp keyPrefix, index uint64, val []byte) ([]byte, error) {
	size, k := binary.Uvarint(val[min(1, len(val)):])
	if len(val) == 0 || val[0] != entryFileMarker || k <= 0 || 1+k+4 != len(val) {
		return nil, fmt.Errorf("%w: malformed entry-file marker %x", ErrCorrupt, val)
	}
	sum := binary.BigEndian.Uint32(val[1+k:])
	path := filepath.Join(dir, entryFileName(kp, index))
	buf, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if uint64(len(buf)) != size || crc32.Checksum(buf, crcTable) != sum {
		return nil, fmt.Errorf("%w: %s holds %d bytes that do not match its marker (%d bytes)", ErrCorrupt, path, len(buf), size)
	}
	return buf, nil
}

// sweepEntryFiles removes the entry files in dir that no marker in db
// names, and temporary files left by a crash. At open, after the replay.
func sweepEntryFiles(db *badger.DB, dir string) (removed int, err error) {
	names, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	var stale []string
	err = db.View(func(txn *badger.Txn) error {
		for _, e := range names {
			name := e.Name()
			if !strings.HasPrefix(name, entryFilePrefix) {
				continue
			}
			kp, index, ok := parseEntryFileName(name)
			if ok {
				item, err := txn.Get(kp.log(index))
				if err == nil && item.UserMeta() == metaEntryFile {
					continue
				}
				if err != nil && !errors.Is(err, badger.ErrKeyNotFound) {
					return err
				}
			}
			stale = append(stale, filepath.Join(dir, name))
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return len(stale), removeEntryFiles(stale)
}
