package fsm

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
)

// A key deleted more than once by one entry (a transaction or a script: one
// logical index for all its commands) keeps one tombstone, and the snapshot
// restores: before, each deletion was listed again and the restore refused
// the count (of released values, or, past 16,384, of tombstones).
func TestKeyDeletedTwiceInOneEntrySnapshots(t *testing.T) {
	tx := func(h *harness, cmds ...string) {
		var cs [][][]byte
		for _, c := range cmds {
			cs = append(cs, args(c))
		}
		h.index++
		h.ks.Apply(h.index, command.Entry{Kind: command.KindTx, Time: h.now, Wall: wall + h.now, Args: command.TxArgs(command.Tx{Cmds: cs})})
	}
	restores := func(t *testing.T, h *harness) {
		t.Helper()
		r := New()
		if err := r.Restore(bytes.NewReader(snapshotBytes(t, h.ks))); err != nil {
			t.Fatalf("restore: %v", err)
		}
	}
	t.Run("transaction", func(t *testing.T) {
		h := newHarness(t)
		withFeatures(h, featuresOn)
		tx(h, "SET k a", "DEL k", "SET k b", "DEL k")
		restores(t, h)
	})
	t.Run("script", func(t *testing.T) {
		h := newHarness(t)
		withFeatures(h, featuresOn)
		h.doArgs("EVAL", "redis.call('SET','k','a') redis.call('DEL','k') redis.call('SET','k','b') redis.call('DEL','k') return 1", "0")
		restores(t, h)
	})
	t.Run("more deletions of one key than tombstones", func(t *testing.T) {
		h := newHarness(t)
		withFeatures(h, featuresOn)
		cmds := make([]string, 0, 2*(maxTombstones+100))
		for i := 0; i < maxTombstones+100; i++ {
			cmds = append(cmds, fmt.Sprintf("HSET k f %d", i), "DEL k")
		}
		tx(h, cmds...)
		restores(t, h)
		if got := string(resp.Append(nil, h.ks.Read(command.Exists{Keys: [][]byte{[]byte("k")}}, h.now, wall+h.now), 2)); got != ":0\r\n" {
			t.Fatalf("EXISTS k = %q", got)
		}
	})
}
