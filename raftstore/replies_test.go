package raftstore

import (
	"errors"
	"github.com/hashicorp/raft"
	"testing"
	"time"
)

// heldFuture is a raft.ApplyFuture that answers once its release channel is
// closed (never, if it is not).
type heldFuture struct{ release chan struct{} }

func (f heldFuture) Error() error          { <-f.release; return nil }
func (f heldFuture) Index() uint64         { return 0 }
func (f heldFuture) Response() interface{} { return nil }

// A request batch's wait ends when its futures answer, in queue order; when
// the store closes, a wait on a future Raft never answers ends with
// ErrClosed, and a later wait fails at once.
func TestReplyQueue(t *testing.T) {
	s := &Store{closed: make(chan struct{}), replies: newReplyQueue()}
	go s.replyLoop()

	first, second := heldFuture{make(chan struct{})}, heldFuture{make(chan struct{})}
	ended := make(chan error, 2)
	go func() { ended <- s.awaitReplies([]raft.ApplyFuture{first}) }()
	go func() { ended <- s.awaitReplies([]raft.ApplyFuture{second}) }()
	select {
	case err := <-ended:
		t.Fatalf("a wait ended (%v) before its future answered", err)
	case <-time.After(20 * time.Millisecond):
	}
	close(first.release)
	close(second.release)
	for range 2 {
		select {
		case err := <-ended:
			if err != nil {
				t.Fatalf("wait on answered futures: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a wait did not end after its future answered")
		}
	}

	never := heldFuture{make(chan struct{})} // Raft, shutting down, never answers it
	go func() { ended <- s.awaitReplies([]raft.ApplyFuture{never}) }()
	deadline := time.Now().Add(5 * time.Second)
	for !queued(s.replies) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	close(s.closed)
	s.replies.close()
	select {
	case err := <-ended:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("wait on an unanswered future at close: %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("closing the store did not end the wait on an unanswered future")
	}
	if err := s.awaitReplies([]raft.ApplyFuture{heldFuture{make(chan struct{})}}); !errors.Is(err, ErrClosed) {
		t.Fatalf("wait after close: %v, want ErrClosed", err)
	}
}

func queued(rq *replyQueue) bool {
	rq.mu.Lock()
	defer rq.mu.Unlock()
	return len(rq.q) > 0
}
