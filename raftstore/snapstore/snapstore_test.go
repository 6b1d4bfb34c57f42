package snapstore

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
)

var testConf = raft.Configuration{Servers: []raft.Server{
	{Suffrage: raft.Voter, ID: "n1", Address: "127.0.0.1:7001"},
	{Suffrage: raft.Nonvoter, ID: "n2", Address: "127.0.0.1:7002"},
}}

// write creates a snapshot at index/term holding data, written in uneven
// pieces, and closes it.
func write(t *testing.T, s raft.SnapshotStore, index, term uint64, data []byte) string {
	t.Helper()
	_, trans := raft.NewInmemTransport("")
	k, err := s.Create(1, index, term, testConf, 3, trans) // FileSnapshotStore encodes the peers with it
	if err != nil {
		t.Fatal(err)
	}
	for p := data; len(p) > 0; {
		n := min(len(p), 1+rand.IntN(300<<10))
		if _, err := k.Write(p[:n]); err != nil {
			t.Fatal(err)
		}
		p = p[n:]
	}
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	return k.ID()
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rand.Uint32())
	}
	return b
}

func read(t *testing.T, s raft.SnapshotStore, id string) (*raft.SnapshotMeta, []byte) {
	t.Helper()
	m, rc, err := s.Open(id)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return m, b
}

// openStore opens a Store retaining 2 snapshots in a new directory.
func openStore(t *testing.T) (*Store, string) {
	t.Helper()
	base := t.TempDir()
	s, err := Open(base, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s, base
}

func TestWriteListOpen(t *testing.T) {
	s, _ := openStore(t)
	if l, err := s.List(); err != nil || len(l) != 0 {
		t.Fatalf("a new store lists %v, %v", l, err)
	}
	data := randomBytes(3<<20 + 17)
	id := write(t, s, 42, 7, data)
	l, err := s.List()
	if err != nil || len(l) != 1 {
		t.Fatalf("List: %v, %v", l, err)
	}
	m := l[0]
	if m.ID != id || m.Index != 42 || m.Term != 7 || m.Size != int64(len(data)) || m.ConfigurationIndex != 3 ||
		m.Version != 1 || len(m.Configuration.Servers) != 2 || m.Configuration.Servers[1] != testConf.Servers[1] {
		t.Fatalf("listed %+v", m)
	}
	om, got := read(t, s, id)
	if !bytes.Equal(got, data) {
		t.Fatalf("read %d bytes back, not the %d written", len(got), len(data))
	}
	if om.Index != 42 || om.Size != int64(len(data)) {
		t.Fatalf("Open's meta %+v", om)
	}
	// An empty state is a snapshot too.
	id = write(t, s, 43, 7, nil)
	if _, got := read(t, s, id); len(got) != 0 {
		t.Fatalf("empty snapshot read back %d bytes", len(got))
	}
}

func TestNewestFirstAndRetain(t *testing.T) {
	s, base := openStore(t)
	var ids []string
	for i, at := range [][2]uint64{{10, 1}, {20, 1}, {15, 2}, {30, 2}} { // index, term
		ids = append(ids, write(t, s, at[0], at[1], []byte{byte(i)}))
	}
	l, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	// Term first, then index: 2/30, then 2/15 (a later term beats 1/20).
	if len(l) != 2 || l[0].ID != ids[3] || l[1].ID != ids[2] {
		t.Fatalf("listed %v, want %s then %s", l, ids[3], ids[2])
	}
	dirs, _ := os.ReadDir(filepath.Join(base, dirName))
	if len(dirs) != 2 {
		t.Fatalf("%d snapshot directories left, want the 2 retained", len(dirs))
	}
}

func TestCorruptionIsDetected(t *testing.T) {
	s, base := openStore(t)
	id := write(t, s, 5, 1, randomBytes(100<<10))
	path := filepath.Join(base, dirName, id, stateFile)
	b, _ := os.ReadFile(path)
	b[len(b)/2] ^= 0x10
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Open(id); !errors.Is(err, ErrChecksum) {
		t.Fatalf("a flipped bit: %v, want ErrChecksum", err)
	}
	if err := os.WriteFile(path, b[:len(b)-1], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Open(id); !errors.Is(err, ErrChecksum) {
		t.Fatalf("a cut state: %v, want ErrChecksum", err)
	}
}

// A data directory written by hashicorp/raft's FileSnapshotStore (the store
// lockd used before) is read as it is, CRC-64 and all, and its damage found.
func TestReadsFileSnapshotStore(t *testing.T) {
	base := t.TempDir()
	old, err := raft.NewFileSnapshotStore(base, 2, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	data := randomBytes(1<<20 + 5)
	oldID := write(t, old, 100, 3, data)
	s, err := Open(base, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.List()
	if err != nil || len(l) != 1 || l[0].ID != oldID || l[0].Index != 100 || l[0].Size != int64(len(data)) {
		t.Fatalf("the old snapshot listed as %v, %v", l, err)
	}
	if _, got := read(t, s, oldID); !bytes.Equal(got, data) {
		t.Fatal("the old snapshot's state differs")
	}
	// A new snapshot after it is listed first; the old one stays retained.
	newID := write(t, s, 200, 3, []byte("new"))
	if l, _ := s.List(); len(l) != 2 || l[0].ID != newID || l[1].ID != oldID {
		t.Fatalf("listed %v", l)
	}
	path := filepath.Join(base, dirName, oldID, stateFile)
	b, _ := os.ReadFile(path)
	b[0] ^= 1
	os.WriteFile(path, b, 0o644)
	if _, _, err := s.Open(oldID); !errors.Is(err, ErrChecksum) {
		t.Fatalf("a damaged old snapshot: %v, want ErrChecksum", err)
	}
}

func TestCancelAndInterrupted(t *testing.T) {
	s, base := openStore(t)
	k, err := s.Create(1, 9, 1, testConf, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	k.Write([]byte("partial"))
	if err := k.Cancel(); err != nil {
		t.Fatal(err)
	}
	if dirs, _ := os.ReadDir(filepath.Join(base, dirName)); len(dirs) != 0 {
		t.Fatalf("a cancelled snapshot left %v", dirs)
	}
	// A crash in the middle of a snapshot leaves its .tmp directory: never
	// listed, and removed when the store opens again.
	k, err = s.Create(1, 10, 1, testConf, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	k.Write([]byte("cut short"))
	if l, _ := s.List(); len(l) != 0 {
		t.Fatalf("an unfinished snapshot is listed: %v", l)
	}
	if _, err := Open(base, 2, nil); err != nil {
		t.Fatal(err)
	}
	if dirs, _ := os.ReadDir(filepath.Join(base, dirName)); len(dirs) != 0 {
		t.Fatalf("the interrupted snapshot's directory is still there: %v", dirs)
	}
	if _, err := s.Create(2, 11, 1, testConf, 1, nil); err == nil {
		t.Fatal("a snapshot of version 2 was created")
	}
}

// BenchmarkWrite writes and syncs a 16 MiB snapshot; BenchmarkWriteFile
// does the same through hashicorp/raft's FileSnapshotStore, for comparison.
func BenchmarkWrite(b *testing.B) {
	s, err := Open(b.TempDir(), 1, nil)
	if err != nil {
		b.Fatal(err)
	}
	benchWrite(b, s)
}

func BenchmarkWriteFile(b *testing.B) {
	s, err := raft.NewFileSnapshotStore(b.TempDir(), 1, io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	benchWrite(b, s)
}

func benchWrite(b *testing.B, s raft.SnapshotStore) {
	_, trans := raft.NewInmemTransport("")
	data := randomBytes(16 << 20)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		k, err := s.Create(1, 1, 1, testConf, 1, trans)
		if err != nil {
			b.Fatal(err)
		}
		k.Write(data)
		if err := k.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
