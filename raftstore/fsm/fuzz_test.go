package fsm

import (
	"bytes"
	"testing"

	"github.com/lockd/lockd/command"
)

// snapshotOf applies cmds (";"-separated) to a fresh keyspace and returns its
// snapshot bytes.
func snapshotOf(t testing.TB, cmds ...string) []byte {
	ks := New()
	for i, c := range cmds {
		ks.Apply(uint64(i+1), command.Entry{Kind: command.KindCommand, Time: int64(i), Wall: wall, Args: args(c)})
	}
	var buf bytes.Buffer
	if _, err := ks.Snapshot().WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// FuzzRestore: the snapshot decoder never panics or allocates without bound
// on arbitrary bytes (a length prefix is not trusted before its bytes
// arrive), and a snapshot it accepts writes back to one that restores to the
// same state.
func FuzzRestore(f *testing.F) {
	f.Add(snapshotOf(f))
	f.Add(snapshotOf(f, "SET k v PX 100", "HSET h a 1 b 2", "LOCK.ACQUIRE l o PX 50", "LOCK.ACQUIRE l p WAIT 100",
		"SESSION.OPEN TTL 1000", "NAMESPACE.SET ns/ LOCKDELAY 5", "EVAL return 1 0", "ACL SETUSER u on nopass ~a* +get"))
	f.Add([]byte("LKS\x02\x00\x00\xff\xff\xff\xff\x0f"))
	f.Add([]byte("LKS\x03\x00\x00\x01\x01\x01k\xff\xff\xff\xff\x0f"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ks := New()
		if err := ks.Restore(bytes.NewReader(b)); err != nil {
			return
		}
		var once, twice bytes.Buffer
		if _, err := ks.Snapshot().WriteTo(&once); err != nil {
			t.Fatal(err)
		}
		again := New()
		if err := again.Restore(bytes.NewReader(once.Bytes())); err != nil {
			t.Fatalf("a restored snapshot's own snapshot does not restore: %v", err)
		}
		again.Snapshot().WriteTo(&twice)
		if !bytes.Equal(once.Bytes(), twice.Bytes()) {
			t.Fatal("snapshot → restore → snapshot is not stable")
		}
	})
}
