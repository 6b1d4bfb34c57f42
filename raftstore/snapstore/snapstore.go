// Package snapstore keeps a Raft group's snapshots in files, as
// hashicorp/raft's FileSnapshotStore does and in its layout
// (snapshots/<term>-<index>-<unix ms>/ with meta.json and state.bin, written
// under a ".tmp" name and renamed into place), but with a CRC-32C
// (Castagnoli) of the state instead of a CRC-64: Go computes CRC-32C with the
// CPU's instruction, about 13 times as fast as CRC-64 on the development VM
// (21 against 1.6 GB/s), and a node checksums every snapshot it writes and
// again every one it opens. A snapshot written by FileSnapshotStore (an
// eight-byte CRC in its meta.json) is still read and checked with CRC-64, so
// a data directory written before moves over as it is; a build from before
// this store refuses the snapshots it writes (CRC mismatch).
//
// Raft calls Create, List and Open from its own goroutines; a Store is safe
// for that. Every method may block on disk I/O.
package snapstore

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"hash/crc64"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/raft"
	"github.com/lockd/lockd/internal/durable"
)

const (
	dirName   = "snapshots"
	metaFile  = "meta.json"
	stateFile = "state.bin"
	tmpSuffix = ".tmp"
)

// ErrChecksum is returned by Open when a snapshot's state does not match the
// checksum its meta.json recorded: the file was damaged after it was written.
var ErrChecksum = errors.New("snapshot state does not match its checksum")

var (
	castagnoli = crc32.MakeTable(crc32.Castagnoli)
	ecma       = crc64.MakeTable(crc64.ECMA)
)

// Store is the snapshots of one group, in <base>/snapshots.
type Store struct {
	dir    string
	retain int
	log    *slog.Logger
}

var _ raft.SnapshotStore = (*Store)(nil)

// meta is meta.json: raft's SnapshotMeta and the state's checksum, the
// fields FileSnapshotStore writes, under the same names.
type meta struct {
	raft.SnapshotMeta
	CRC []byte // 4 bytes: CRC-32C (this store); 8 bytes: CRC-64 ECMA (FileSnapshotStore)
}

// Open opens (creating it when missing) the snapshot directory under base,
// keeping the newest retain snapshots (at least 1). It removes the ".tmp"
// directories of snapshots a crash interrupted: nothing else writes there
// while a node starts.
func Open(base string, retain int, lg *slog.Logger) (*Store, error) {
	if retain < 1 {
		return nil, fmt.Errorf("snapshot: must retain at least one snapshot (%d)", retain)
	}
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	s := &Store{dir: filepath.Join(base, dirName), retain: retain, log: lg}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() && strings.HasSuffix(e.Name(), tmpSuffix) {
			lg.Info("removing an unfinished snapshot", "path", filepath.Join(s.dir, e.Name()))
			if err := os.RemoveAll(filepath.Join(s.dir, e.Name())); err != nil {
				return nil, fmt.Errorf("snapshot: %w", err)
			}
		}
	}
	// A file written and removed proves the directory writable now, not at
	// the first snapshot.
	probe := filepath.Join(s.dir, "permTest")
	f, err := os.Create(probe)
	if err != nil {
		return nil, fmt.Errorf("snapshot: directory not writable: %w", err)
	}
	f.Close()
	if err := os.Remove(probe); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	return s, nil
}

// Create starts a snapshot of version 1 (the only one raft writes) at index
// and term. Its sink writes state.bin; Close makes it durable and visible.
// The metadata's Peers (the membership of version 0 snapshots, which raft
// reads only from those) is not written, so the transport is not needed.
func (s *Store) Create(version raft.SnapshotVersion, index, term uint64, configuration raft.Configuration,
	configurationIndex uint64, _ raft.Transport) (raft.SnapshotSink, error) {
	if version != 1 {
		return nil, fmt.Errorf("snapshot: unsupported snapshot version %d", version)
	}
	name := fmt.Sprintf("%d-%d-%d", term, index, time.Now().UnixMilli())
	dir := filepath.Join(s.dir, name+tmpSuffix)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	k := &sink{store: s, dir: dir, meta: meta{SnapshotMeta: raft.SnapshotMeta{
		Version: version, ID: name, Index: index, Term: term,
		Configuration: configuration, ConfigurationIndex: configurationIndex,
	}}}
	f, err := os.Create(filepath.Join(dir, stateFile))
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	k.f = f
	k.w = bufio.NewWriterSize(f, 256<<10)
	s.log.Debug("creating a snapshot", "path", dir)
	return k, nil
}

// List returns the retained snapshots' metadata, the newest (highest term,
// then index) first. A directory whose meta.json cannot be read is skipped
// with a warning.
func (s *Store) List() ([]*raft.SnapshotMeta, error) {
	metas, err := s.all()
	if err != nil {
		return nil, err
	}
	out := make([]*raft.SnapshotMeta, 0, min(len(metas), s.retain))
	for _, m := range metas[:min(len(metas), s.retain)] {
		out = append(out, &m.SnapshotMeta)
	}
	return out, nil
}

// all reads every finished snapshot's meta.json, newest first.
func (s *Store) all() ([]*meta, error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	var metas []*meta
	for _, e := range entries {
		if !e.IsDir() || strings.HasSuffix(e.Name(), tmpSuffix) {
			continue
		}
		m, err := s.readMeta(e.Name())
		if err != nil {
			s.log.Warn("skipping a snapshot whose metadata cannot be read", "name", e.Name(), "error", err)
			continue
		}
		if m.Version < raft.SnapshotVersionMin || m.Version > raft.SnapshotVersionMax {
			s.log.Warn("skipping a snapshot of an unsupported version", "name", e.Name(), "version", m.Version)
			continue
		}
		metas = append(metas, m)
	}
	slices.SortFunc(metas, func(a, b *meta) int {
		return cmp.Or(cmp.Compare(b.Term, a.Term), cmp.Compare(b.Index, a.Index), strings.Compare(b.ID, a.ID))
	})
	return metas, nil
}

func (s *Store) readMeta(name string) (*meta, error) {
	b, err := os.ReadFile(filepath.Join(s.dir, name, metaFile))
	if err != nil {
		return nil, err
	}
	m := new(meta)
	if err := json.Unmarshal(b, m); err != nil {
		return nil, err
	}
	return m, nil
}

// Open returns a snapshot's metadata and its state, after checking the whole
// state against its checksum (ErrChecksum). The caller closes the reader.
func (s *Store) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	m, err := s.readMeta(id)
	if err != nil {
		return nil, nil, fmt.Errorf("snapshot %s: %w", id, err)
	}
	var h hash.Hash
	switch len(m.CRC) {
	case crc32.Size:
		h = crc32.New(castagnoli)
	case crc64.Size:
		h = crc64.New(ecma)
	default:
		return nil, nil, fmt.Errorf("snapshot %s: a checksum of %d bytes: %w", id, len(m.CRC), ErrChecksum)
	}
	f, err := os.Open(filepath.Join(s.dir, id, stateFile))
	if err != nil {
		return nil, nil, fmt.Errorf("snapshot %s: %w", id, err)
	}
	n, err := io.Copy(h, f)
	if err == nil && n != m.Size {
		err = fmt.Errorf("state is %d bytes, its metadata says %d: %w", n, m.Size, ErrChecksum)
	}
	if err == nil && !bytes.Equal(h.Sum(nil), m.CRC) {
		err = ErrChecksum
	}
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("snapshot %s: %w", id, err)
	}
	return &m.SnapshotMeta, &reader{Reader: bufio.NewReaderSize(f, 256<<10), f: f}, nil
}

// reap removes the finished snapshots beyond the newest retain.
func (s *Store) reap() error {
	metas, err := s.all()
	if err != nil {
		return err
	}
	for _, m := range metas[min(len(metas), s.retain):] {
		s.log.Debug("removing an old snapshot", "id", m.ID)
		if err := os.RemoveAll(filepath.Join(s.dir, m.ID)); err != nil {
			return fmt.Errorf("snapshot: %w", err)
		}
	}
	return nil
}

type reader struct {
	*bufio.Reader
	f *os.File
}

func (r *reader) Close() error { return r.f.Close() }

// sink writes one snapshot. Raft's snapshot goroutine (or an
// InstallSnapshot it receives) writes it and then calls Close or Cancel once.
type sink struct {
	store *Store
	dir   string
	meta  meta
	f     *os.File
	w     *bufio.Writer
	crc   uint32
	done  bool
}

func (k *sink) ID() string { return k.meta.ID }

// Write appends to the state and its checksum.
func (k *sink) Write(p []byte) (int, error) {
	n, err := k.w.Write(p)
	k.crc = crc32.Update(k.crc, castagnoli, p[:n])
	k.meta.Size += int64(n)
	return n, err
}

// Close makes the snapshot durable (state, metadata and their directory
// synced), then visible (the directory renamed from its ".tmp" name and the
// rename synced), then
// removes the snapshots beyond the store's retain. On an error the snapshot
// is removed and never listed.
func (k *sink) Close() error {
	if k.done {
		return nil
	}
	k.done = true
	if err := k.finish(); err != nil {
		k.store.log.Error("failed to finish a snapshot", "path", k.dir, "error", err)
		if rmErr := os.RemoveAll(k.dir); rmErr != nil {
			return errors.Join(err, rmErr)
		}
		return err
	}
	if err := k.store.reap(); err != nil {
		k.store.log.Error("failed to remove old snapshots", "error", err)
		return err
	}
	return nil
}

func (k *sink) finish() error {
	err := k.w.Flush()
	if err == nil {
		err = k.f.Sync()
	}
	if cerr := k.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("snapshot: state: %w", err)
	}
	k.meta.CRC = binary.BigEndian.AppendUint32(nil, k.crc)
	b, err := json.Marshal(&k.meta)
	if err != nil {
		return fmt.Errorf("snapshot: metadata: %w", err)
	}
	if err := durable.WriteFile(filepath.Join(k.dir, metaFile), b, 0o644); err != nil {
		return fmt.Errorf("snapshot: metadata: %w", err)
	}
	if err := durable.SyncDir(k.dir); err != nil { // the entries of state.bin and meta.json
		return fmt.Errorf("snapshot: %w", err)
	}
	final := strings.TrimSuffix(k.dir, tmpSuffix)
	if err := os.Rename(k.dir, final); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	k.dir = final
	return durable.SyncDir(k.store.dir)
}

// Cancel abandons the snapshot and removes what it wrote.
func (k *sink) Cancel() error {
	if k.done {
		return nil
	}
	k.done = true
	k.f.Close()
	return os.RemoveAll(k.dir)
}
