package raftio

import (
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
)

// logCacheEntries is a group's log cache size (raftstore/group).
const logCacheEntries = 512

// The log cache keeps small entries in memory and leaves large ones to the
// store, so that its memory stays bounded whatever the values.
func TestLogCacheSkipsLargeEntries(t *testing.T) {
	inner := raft.NewInmemStore()
	reads := &countingReads{LogStore: inner}
	c := NewLogCache(reads, logCacheEntries)
	small := &raft.Log{Index: 1, Type: raft.LogCommand, Data: []byte("small")}
	large := &raft.Log{Index: 2, Type: raft.LogCommand, Data: []byte(strings.Repeat("x", LogCacheMaxData+1))}
	if err := c.StoreLogs([]*raft.Log{small, large}); err != nil {
		t.Fatal(err)
	}
	var got raft.Log
	if err := c.GetLog(1, &got); err != nil || string(got.Data) != "small" || reads.n != 0 {
		t.Fatalf("small entry: %q, %v, %d store reads; want it from memory", got.Data, err, reads.n)
	}
	if err := c.GetLog(2, &got); err != nil || len(got.Data) != LogCacheMaxData+1 || reads.n != 1 {
		t.Fatalf("large entry: %d bytes, %v, %d store reads; want it from the store", len(got.Data), err, reads.n)
	}
	if c.ring[2%logCacheEntries] != nil {
		t.Fatal("the large entry is held in the cache")
	}
	// A deleted range is not served from memory.
	if err := c.DeleteRange(1, 2); err != nil {
		t.Fatal(err)
	}
	if err := c.GetLog(1, &got); !errors.Is(err, raft.ErrLogNotFound) {
		t.Fatalf("GetLog after DeleteRange: %v, want ErrLogNotFound", err)
	}
}

type countingReads struct {
	raft.LogStore
	n int
}

func (c *countingReads) GetLog(i uint64, l *raft.Log) error { c.n++; return c.LogStore.GetLog(i, l) }
