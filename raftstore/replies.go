package raftstore

import (
	"sync"

	"github.com/hashicorp/raft"
)

// replyWait is one wait on Raft futures (a request batch's, or one of the
// store's own loops'), waited for by the store's replyLoop.
type replyWait struct {
	fs   []raft.Future
	err  error         // nil, or ErrClosed when the store closed first; set before done closes
	done chan struct{} // closed once every future in fs answered, or the store closed
}

// replyQueue holds the batches whose futures replyLoop has yet to see
// answered, in the order they were queued. Whoever takes a batch out of it
// (replyLoop once its futures answered, or close) ends its wait, under mu, so
// each wait ends exactly once.
type replyQueue struct {
	mu     sync.Mutex
	q      []*replyWait // q[0] is the batch replyLoop waits on
	closed bool
	kick   chan struct{} // one pending at most: the queue is no longer empty
}

func newReplyQueue() *replyQueue {
	return &replyQueue{kick: make(chan struct{}, 1)}
}

// awaitReplies waits until every future in fs answered, or returns ErrClosed
// as soon as the store is closing. hashicorp/raft never answers a future
// still in its buffered apply channel (BatchApplyCh) when it shuts down, so
// every wait on an Apply or Barrier future goes through here, or Close, which
// waits for the store's loops, may wait forever (TestWaitTimesOut hung so
// once: an expiry tick proposed as the test closed its store). The waiting
// itself is done by replyLoop, one goroutine for all of the store's waits,
// rather than by a goroutine per wait: on a single node's request path that
// goroutine's start and wake-up, and every waiter selecting on the store's
// one closed channel, cost about a fifth of the CPU per request. Blocks.
func (s *Store) awaitReplies(fs []raft.Future) error {
	rq := s.replies
	w := &replyWait{fs: fs, done: make(chan struct{})}
	rq.mu.Lock()
	if rq.closed {
		rq.mu.Unlock()
		return ErrClosed
	}
	rq.q = append(rq.q, w)
	rq.mu.Unlock()
	select {
	case rq.kick <- struct{}{}:
	default:
	}
	<-w.done
	return w.err
}

// await waits for one future through awaitReplies and returns its error, or
// ErrClosed when the store closed first. For the store's own loops.
func (s *Store) await(f raft.Future) error {
	if err := s.awaitReplies([]raft.Future{f}); err != nil {
		return err
	}
	return f.Error() // answered: returns at once
}

// replyLoop waits for the futures of the queued batches, one batch after the
// other, and ends each batch's wait when all of its futures answered. Raft
// answers a group's futures in the order they were proposed (applied in log
// order, or all failed at once when leadership is lost), so waiting in queue
// order holds nobody up for long: a batch queued behind another was almost
// always proposed after it too. It may wait forever on a future that Raft,
// shutting down, never answers; so it is not one of the loops Close waits
// for, and closing the queue (Close) ends every wait it has not ended.
func (s *Store) replyLoop() {
	rq := s.replies
	for {
		rq.mu.Lock()
		if rq.closed {
			rq.mu.Unlock()
			return
		}
		if len(rq.q) == 0 {
			rq.mu.Unlock()
			select {
			case <-rq.kick:
			case <-s.closed:
			}
			continue
		}
		w := rq.q[0]
		rq.mu.Unlock()
		for _, f := range w.fs {
			f.Error()
		}
		rq.mu.Lock()
		if !rq.closed { // else close ended its wait
			rq.q[0] = nil
			rq.q = rq.q[1:]
			close(w.done)
		}
		rq.mu.Unlock()
	}
}

// close ends every wait still queued with ErrClosed; later waits fail at
// once. Called by Close, after it closed s.closed.
func (rq *replyQueue) close() {
	rq.mu.Lock()
	defer rq.mu.Unlock()
	if rq.closed {
		return
	}
	rq.closed = true
	for _, w := range rq.q {
		w.err = ErrClosed
		close(w.done)
	}
	rq.q = nil
}
