package logstore

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/hashicorp/raft"

	"github.com/lockd/lockd/raftstore/journal"
)

// LogWrite is one Store's part of a StoreTogether: the entries it stores.
type LogWrite struct {
	Store *Store
	Logs  []*raft.Log // not empty
}

// StoreTogether stores every part's entries, each as its Store's StoreLogs
// would, in one journal record made durable with one fdatasync: the write of
// a driver that runs several groups' Raft and has a turn's entries of all of
// them at once (package multiraft). It writes on the caller's goroutine when
// nothing is queued for the committer, else through it, after what is queued
// (the parts may then land in more than one record, in order). Every part's
// Store must belong to sh, appear once, and not defer its syncs
// (DeferSyncWhen). An error is the journal's, which is sticky: the caller
// stops writing (the parts written as one record count as stored together
// or not at all).
func (sh *Shared) StoreTogether(parts []LogWrite) error {
	parts = slices.Clone(parts)
	slices.SortFunc(parts, func(a, b LogWrite) int { return bytes.Compare(a.Store.kp, b.Store.kp) })
	held := 0
	defer func() {
		for _, p := range parts[:held] {
			p.Store.closeMu.RUnlock()
		}
	}()
	for _, p := range parts {
		if p.Store.sh != sh {
			return fmt.Errorf("logstore: store together: a store of another Shared")
		}
		if err := p.Store.acquire(); err != nil {
			return err
		}
		held++
	}
	reqs := make([]*setsReq, len(parts))
	for i, p := range parts {
		s := p.Store
		s.batches.Add(1)
		keys, vals, split, err := s.encodeLogs(p.Logs)
		if err != nil {
			return err
		}
		lo, hi := logBounds(p.Logs)
		reqs[i] = &setsReq{Write: journal.Write{Keys: keys, Vals: vals, Split: split, Tail: s.tail}, stored: func() { s.extendBounds(lo, hi) }}
	}
	for _, p := range parts { // in group order: two callers cannot deadlock
		p.Store.writeMu.Lock()
		defer p.Store.writeMu.Unlock()
		if err := p.Store.dur.err(); err != nil {
			return err
		}
	}
	if err := sh.commitAll(reqs); err != nil {
		return fmt.Errorf("logstore: store together: %w", err)
	}
	for _, p := range parts {
		_, hi := logBounds(p.Logs)
		p.Store.dur.advance(hi)
	}
	return nil
}

// commitAll makes reqs durable: as one batch on the caller's goroutine when
// nothing is queued before them, else through the committer, in order.
func (sh *Shared) commitAll(reqs []*setsReq) error {
	if done, err := sh.writeInline(reqs, true); done {
		return err
	}
	for _, r := range reqs {
		r.done = make(chan error, 1)
		if err := sh.enqueue(r); err != nil {
			return err
		}
	}
	var first error
	for _, r := range reqs {
		if err := <-r.done; err != nil && first == nil {
			first = err
		}
	}
	return first
}
