package group

import (
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// heldFuture is a raft.Future that answers err once its release channel is
// closed (never, if it is not).
type heldFuture struct {
	release chan struct{}
	err     error
}

func held() heldFuture            { return heldFuture{release: make(chan struct{})} }
func (f heldFuture) Error() error { <-f.release; return f.err }

// waitingStore is a Store with just what waiting on futures needs.
func waitingStore() *Store {
	s := &Store{closed: make(chan struct{}), replies: newReplyQueue()}
	go s.replyLoop()
	return s
}

// ended receives a wait's outcome, failing the test when none comes within 5s.
func ended(t *testing.T, ch <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: still waiting after 5s", what)
		return nil
	}
}

// notEnded fails the test when a wait ends within 20ms.
func notEnded(t *testing.T, ch <-chan error, what string) {
	t.Helper()
	select {
	case err := <-ch:
		t.Fatalf("%s ended (%v) before its future answered or the store closed", what, err)
	case <-time.After(20 * time.Millisecond):
	}
}

// Waits on futures end when their futures answer, in queue order, and one
// future's wait hands back that future's error; when the store closes, a
// wait on a future Raft never answers (an Apply future stranded in
// hashicorp/raft's buffered apply channel at shutdown, which once kept
// TestWaitTimesOut's Close waiting for the expiry loop) ends with ErrClosed,
// and a later wait fails at once.
func TestReplyQueue(t *testing.T) {
	s := waitingStore()

	first, second := held(), held()
	waits := make(chan error, 2)
	go func() { waits <- s.awaitReplies([]raft.Future{first}) }()
	go func() { waits <- s.awaitReplies([]raft.Future{second}) }()
	notEnded(t, waits, "a wait")
	close(first.release)
	close(second.release)
	for range 2 {
		if err := ended(t, waits, "a wait on answered futures"); err != nil {
			t.Fatalf("wait on answered futures: %v", err)
		}
	}

	want := errors.New("the future's error")
	failed := heldFuture{release: make(chan struct{}), err: want}
	close(failed.release)
	if err := s.await(failed); err != want {
		t.Fatalf("await of a future that answered %v = %v", want, err)
	}

	never := held() // Raft, shutting down, never answers it
	go func() { waits <- s.await(never) }()
	notEnded(t, waits, "await")
	waitFor(t, 5*time.Second, "the wait queued", func() bool { return queued(s.replies) })
	close(s.closed)
	s.replies.close()
	if err := ended(t, waits, "await on an unanswered future at close"); !errors.Is(err, ErrClosed) {
		t.Fatalf("await on an unanswered future at close: %v, want ErrClosed", err)
	}
	if err := s.awaitReplies([]raft.Future{held()}); !errors.Is(err, ErrClosed) {
		t.Fatalf("wait after close: %v, want ErrClosed", err)
	}
}

func queued(rq *replyQueue) bool {
	rq.mu.Lock()
	defer rq.mu.Unlock()
	return len(rq.q) > 0
}
