package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	errDeadline = fmt.Errorf("%w: its local deadline passed", ErrLockLost)
	errNotHeld  = fmt.Errorf("%w: the server says it is no longer held", ErrLockLost)
	errReleased = errors.New("client: lock released")
)

// Compare-and-pexpire and compare-and-delete for plain Redis: they act only
// while the key still holds this holder's owner value.
var (
	extendScript = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then
  return redis.call("pexpire", KEYS[1], ARGV[2])
end
return 0`)
	releaseScript = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then
  return redis.call("del", KEYS[1])
end
return 0`)
)

// Lock is a held lock. Its holder must stop working on the protected
// resource when Context is done, and should pass Token to the resource so
// that a stale holder's writes are rejected (see FencedExec).
//
// The local deadline of a lease is the monotonic send time of the request
// that last set the lease (the acquire or the last acknowledged Extend) plus
// the TTL, less the safety margin: the server's lease began after that send,
// so the holder stops before the server can hand the lock to anyone else, and
// a slow reply only makes it stop sooner. A lock held WithSession has its
// session's deadline instead.
type Lock struct {
	l       *Locker
	name    string
	owner   string
	token   int64 // 0 in plain-Redis mode
	session *Session
	ctx     context.Context
	cancel  context.CancelCauseFunc

	mu  sync.Mutex
	ttl time.Duration
	dl  deadlineTimer // a lease's local deadline (not used WithSession)
}

// Name is the lock's name.
func (lk *Lock) Name() string { return lk.name }

// Owner is the holder's owner name.
func (lk *Lock) Owner() string { return lk.owner }

// Token is the fencing token of the grant: larger than the token of every
// earlier grant of the name. In plain-Redis mode there is none: it answers
// ErrNoToken.
func (lk *Lock) Token() (int64, error) {
	if lk.l.plain {
		return 0, fmt.Errorf("%w: plain Redis grants no fencing tokens (use lockd for correctness locks)", ErrNoToken)
	}
	return lk.token, nil
}

// Context is cancelled at the lock's local deadline, when the lock is found
// lost, when its session ends, or on Release; context.Cause then tells which
// (ErrLockLost, ErrSessionExpired). The timer that cancels it may run a
// moment late after the process was paused: check Remaining (or Err) right
// before an action that must not run late.
func (lk *Lock) Context() context.Context { return lk.ctx }

// Remaining is the time left before the local deadline, read from the clock
// now (0 once it has passed or the lock is lost).
func (lk *Lock) Remaining() time.Duration {
	if lk.ctx.Err() != nil {
		return 0
	}
	if lk.session != nil {
		return lk.session.Remaining()
	}
	lk.mu.Lock()
	defer lk.mu.Unlock()
	r := lk.dl.deadline.Sub(lk.l.clock.Now())
	if r <= 0 {
		lk.dl.stop()
		lk.cancel(errDeadline)
		return 0
	}
	return r
}

// Err is nil while the lock is held within its local deadline; otherwise the
// reason it is not (ErrLockLost, ErrSessionExpired, or released).
func (lk *Lock) Err() error {
	if lk.Remaining() > 0 {
		return nil
	}
	return context.Cause(lk.ctx)
}

// fire is the deadline timer's callback.
func (lk *Lock) fire(gen uint64) {
	lk.mu.Lock()
	defer lk.mu.Unlock()
	if lk.dl.due(gen) {
		lk.cancel(errDeadline)
	}
}

// finish ends the lock locally.
func (lk *Lock) finish(cause error) {
	lk.mu.Lock()
	lk.dl.stop()
	lk.mu.Unlock()
	lk.cancel(cause)
}

// Extend renews the lease for ttl from now (0: the TTL it was acquired
// with) and moves the local deadline to the send time of this request plus
// ttl, less the margin. It answers ErrLockLost when the lock was lost — its
// local deadline passed (a lost lock is never revived, even if the server
// still has it), the server no longer has it, or the acknowledgement
// arrived after the local deadline. For a lock held WithSession it only
// checks that the server still has it. A request whose outcome is unknown is
// retried (extending is idempotent) until the local deadline.
func (lk *Lock) Extend(ctx context.Context, ttl time.Duration) error {
	lk.mu.Lock()
	if ttl == 0 {
		ttl = lk.ttl
	}
	lk.mu.Unlock()
	if ttl < time.Millisecond {
		return fmt.Errorf("client: lease %v is shorter than 1ms", ttl)
	}
	for attempt := 1; ; attempt++ {
		if err := lk.Err(); err != nil {
			return err
		}
		sent := lk.l.clock.Now()
		var n int64
		var err error
		if lk.l.plain {
			n, err = extendScript.Run(ctx, lk.l.rc, []string{lk.name}, lk.owner, ttl.Milliseconds()).Int64()
		} else {
			n, err = lk.l.do(ctx, 1, "LOCK.EXTEND", lk.name, lk.token, ttl.Milliseconds()).Int64()
		}
		switch classify(err) {
		case outOK:
			if n == 0 {
				lk.finish(errNotHeld)
				return errNotHeld
			}
			if lk.session != nil {
				return lk.Err()
			}
			lk.mu.Lock()
			late := lk.ctx.Err() != nil || !lk.l.clock.Now().Before(lk.dl.deadline)
			if !late {
				lk.ttl = ttl
				lk.dl.set(lk.l.safeDeadline(sent, ttl))
			}
			lk.mu.Unlock()
			if late {
				lk.l.giveBack(ctx, lk)
				return fmt.Errorf("%w: the extension of %q was acknowledged after its local deadline", ErrLockLost, lk.name)
			}
			return nil
		case outFinal:
			return fmt.Errorf("client: extend %s: %w", lk.name, err)
		}
		if ctx.Err() != nil || attempt >= maxUnknown {
			return fmt.Errorf("%w: extend %s: %v", ErrUnknownOutcome, lk.name, err)
		}
		lk.l.sleep(ctx, 50*time.Millisecond)
	}
}

// Release gives the lock back (LOCK.RELEASE by token, or compare-and-delete
// against plain Redis) and cancels Context. It answers nil when the lock was
// held up to the release, and ErrLockLost when it had been lost before
// (locally or on the server): work done after that was not protected by the
// lock. A request whose outcome is unknown is retried (releasing is
// idempotent).
func (lk *Lock) Release(ctx context.Context) error {
	lostBefore := lk.Err()
	if errors.Is(lostBefore, errReleased) {
		return nil
	}
	unknown := false
	for attempt := 1; ; attempt++ {
		var n int64
		var err error
		if lk.l.plain {
			n, err = releaseScript.Run(ctx, lk.l.rc, []string{lk.name}, lk.owner).Int64()
		} else {
			n, err = lk.l.do(ctx, 1, "LOCK.RELEASE", lk.name, lk.token).Int64()
		}
		switch classify(err) {
		case outOK:
			lk.finish(errReleased)
			switch {
			case lostBefore != nil:
				return lostBefore
			case n == 0 && !unknown:
				return fmt.Errorf("%w: %q was no longer held when released", ErrLockLost, lk.name)
			}
			return nil
		case outFinal:
			lk.finish(errReleased)
			return fmt.Errorf("client: release %s: %w", lk.name, err)
		case outUnknown:
			unknown = true
		}
		if ctx.Err() != nil || attempt >= maxUnknown {
			lk.finish(errReleased)
			return fmt.Errorf("%w: release %s: %v", ErrUnknownOutcome, lk.name, err)
		}
		lk.l.sleep(ctx, 50*time.Millisecond)
	}
}
