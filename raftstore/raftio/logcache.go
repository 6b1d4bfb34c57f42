package raftio

import (
	"sync"

	"github.com/hashicorp/raft"
)

// LogCacheMaxData is the longest entry data the log cache keeps: larger
// entries are read back from the log store. hashicorp/raft's LogCache keeps
// every entry, so 512 entries of 4 MiB values held 2 GiB of a group's memory.
const LogCacheMaxData = 16 << 10

// LogCache serves the newest log entries from memory (a ring of a fixed
// number of slots by index, as hashicorp/raft's LogCache does) so that the
// replicators do not read back from disk what the leader just appended, but
// only entries of at most LogCacheMaxData bytes: a cache of n slots holds at
// most n × LogCacheMaxData bytes of data. Safe for concurrent
// use; hashicorp/raft calls it from its leader loop and its replicators.
type LogCache struct {
	raft.LogStore // the store it caches: every method but these three

	mu   sync.RWMutex
	ring []*raft.Log
}

// NewLogCache returns a cache of the newest entries (entries slots, at least
// one) in front of store.
func NewLogCache(store raft.LogStore, entries int) *LogCache {
	return &LogCache{LogStore: store, ring: make([]*raft.Log, max(entries, 1))}
}

// GetLog returns the entry from the ring if it is there, else from the
// store.
func (c *LogCache) GetLog(index uint64, log *raft.Log) error {
	c.mu.RLock()
	l := c.ring[index%uint64(len(c.ring))]
	c.mu.RUnlock()
	if l != nil && l.Index == index {
		*log = *l
		return nil
	}
	return c.LogStore.GetLog(index, log)
}

// StoreLog stores one entry (StoreLogs).
func (c *LogCache) StoreLog(log *raft.Log) error { return c.StoreLogs([]*raft.Log{log}) }

// StoreLogs stores the entries and, once the store has them, caches the
// small ones; a large one empties its slot.
func (c *LogCache) StoreLogs(logs []*raft.Log) error {
	if err := c.LogStore.StoreLogs(logs); err != nil {
		return err
	}
	c.mu.Lock()
	for _, l := range logs {
		slot := &c.ring[l.Index%uint64(len(c.ring))]
		if len(l.Data) <= LogCacheMaxData {
			*slot = l
		} else {
			*slot = nil
		}
	}
	c.mu.Unlock()
	return nil
}

// DeleteRange empties the ring and deletes the range from the store.
func (c *LogCache) DeleteRange(min, max uint64) error {
	c.mu.Lock()
	clear(c.ring)
	c.mu.Unlock()
	return c.LogStore.DeleteRange(min, max)
}
