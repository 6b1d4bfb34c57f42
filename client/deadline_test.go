package client_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/client"
)

// The local deadline of a lease is the send time of the acquire plus the TTL
// less the margin (15 s - 3 s): however long the reply takes, the holder stops
// at the same moment after it sent, so a slower reply leaves it less time.
func TestAcquireDeadlineCountsFromSend(t *testing.T) {
	for _, delay := range []time.Duration{0, time.Second, 4 * time.Second, 11*time.Second + 900*time.Millisecond} {
		t.Run(delay.String(), func(t *testing.T) {
			var clk *fakeClock
			l, _, clk := newFake(t, func(args []string) (any, error) {
				clk.Advance(delay) // the reply takes this long
				return int64(7), nil
			})
			sent := clk.Now()
			lk, err := l.Acquire(context.Background(), "res", client.WithTTL(15*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if got, want := lk.Remaining(), 12*time.Second-delay; got != want {
				t.Fatalf("reply after %v: %v left, want %v (12s from the send)", delay, got, want)
			}
			clk.Advance(sent.Add(12*time.Second - time.Millisecond).Sub(clk.Now()))
			if lk.Context().Err() != nil || lk.Err() != nil {
				t.Fatalf("lost 1ms before the local deadline: %v", lk.Err())
			}
			clk.Advance(time.Millisecond)
			if lk.Context().Err() == nil {
				t.Fatal("Context not cancelled at the local deadline")
			}
			if !errors.Is(context.Cause(lk.Context()), client.ErrLockLost) || !errors.Is(lk.Err(), client.ErrLockLost) {
				t.Fatalf("cause %v, want ErrLockLost", context.Cause(lk.Context()))
			}
		})
	}
}

// A grant whose reply arrives after its local deadline is given back at
// once: the holder never starts.
func TestAcquireTooSlowReplyIsGivenBack(t *testing.T) {
	var clk *fakeClock
	l, fs, clk := newFake(t, func(args []string) (any, error) {
		switch args[0] {
		case "LOCK.ACQUIRE":
			clk.Advance(12 * time.Second)
			return int64(7), nil
		case "LOCK.RELEASE":
			return int64(1), nil
		}
		return nil, srvErr("ERR unexpected " + args[0])
	})
	_, err := l.Acquire(context.Background(), "res")
	if !errors.Is(err, client.ErrLockLost) {
		t.Fatalf("Acquire = %v, want ErrLockLost", err)
	}
	if fs.count("LOCK.RELEASE res 7") != 1 {
		t.Fatalf("the late grant was not released: %v", fs.calls)
	}
}

// Extend moves the deadline to its own send time plus the TTL less the
// margin; a slow acknowledgement leaves less time, one that arrives after the
// old deadline loses the lock, and a shorter TTL moves the deadline earlier.
func TestExtendDeadlineCountsFromSend(t *testing.T) {
	var clk *fakeClock
	var extendDelay time.Duration
	l, fs, clk := newFake(t, func(args []string) (any, error) {
		switch args[0] {
		case "LOCK.ACQUIRE":
			return int64(7), nil
		case "LOCK.EXTEND":
			clk.Advance(extendDelay)
			return int64(1), nil
		case "LOCK.RELEASE":
			return int64(1), nil
		}
		return nil, srvErr("ERR unexpected " + args[0])
	})
	ctx := context.Background()
	lk, err := l.Acquire(ctx, "res", client.WithTTL(15*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(5 * time.Second) // 7 s left
	extendDelay = 2 * time.Second
	if err := lk.Extend(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if got := lk.Remaining(); got != 10*time.Second { // 12 s from the send, 2 s of them in flight
		t.Fatalf("after a 2s extend: %v left, want 10s", got)
	}
	extendDelay = 0
	if err := lk.Extend(ctx, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if got := lk.Remaining(); got != 4*time.Second { // a shorter lease: 5 s - 1 s margin
		t.Fatalf("after extending to 5s: %v left, want 4s", got)
	}
	extendDelay = 4 * time.Second // longer than what is left
	err = lk.Extend(ctx, 15*time.Second)
	if !errors.Is(err, client.ErrLockLost) || lk.Context().Err() == nil {
		t.Fatalf("an extension acknowledged after the deadline: %v (ctx %v), want ErrLockLost", err, lk.Context().Err())
	}
	if fs.count("LOCK.RELEASE") != 1 {
		t.Fatalf("the lost lock was not given back: %v", fs.calls)
	}
	n := fs.count("LOCK.EXTEND")
	if err := lk.Extend(ctx, 0); !errors.Is(err, client.ErrLockLost) {
		t.Fatalf("Extend of a lost lock = %v", err)
	}
	if fs.count("LOCK.EXTEND") != n {
		t.Fatal("a lost lock was extended on the server")
	}
}

// The server saying 0 (not a holder) loses the lock; Release then says the
// lock had been lost.
func TestExtendNotHeld(t *testing.T) {
	l, _, _ := newFake(t, func(args []string) (any, error) {
		switch args[0] {
		case "LOCK.ACQUIRE":
			return int64(7), nil
		}
		return int64(0), nil
	})
	ctx := context.Background()
	lk, err := l.Acquire(ctx, "res")
	if err != nil {
		t.Fatal(err)
	}
	if err := lk.Extend(ctx, 0); !errors.Is(err, client.ErrLockLost) {
		t.Fatalf("Extend = %v, want ErrLockLost", err)
	}
	if !errors.Is(context.Cause(lk.Context()), client.ErrLockLost) {
		t.Fatalf("cause %v", context.Cause(lk.Context()))
	}
	if err := lk.Release(ctx); !errors.Is(err, client.ErrLockLost) {
		t.Fatalf("Release = %v, want ErrLockLost", err)
	}
}

// A session's deadline counts from the send time of its last acknowledged
// keepalive; when keepalives fail the session and its locks end exactly at
// that deadline (not when the server would expire it), and a NOSESSION reply
// ends them at once.
func TestSessionDeadline(t *testing.T) {
	var clk *fakeClock
	keepalive := func() (any, error) { return int64(15000), nil }
	l, fs, clk := newFake(t, func(args []string) (any, error) {
		switch args[0] {
		case "SESSION.OPEN":
			return map[any]any{"session_id": int64(9), "ttl_ms": int64(15000), "keepalive_ms": int64(5000)}, nil
		case "SESSION.KEEPALIVE":
			return keepalive()
		case "LOCK.ACQUIRE":
			return int64(11), nil
		}
		return int64(0), nil
	})
	ctx := context.Background()
	opened := clk.Now()
	s, err := l.OpenSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.ID() != 9 || s.Remaining() != 12*time.Second {
		t.Fatalf("session %d with %v left, want 9 with 12s", s.ID(), s.Remaining())
	}
	lk, err := l.Acquire(ctx, "res", client.WithSession(s))
	if err != nil {
		t.Fatal(err)
	}
	// A keepalive at +5s, acknowledged after 3 s: the deadline is 12 s after
	// its send, at +17s.
	keepalive = func() (any, error) { clk.Advance(3 * time.Second); return int64(15000), nil }
	eventually(t, "the keepalive loop to rest", func() bool { return clk.pending() == 2 })
	clk.Advance(5 * time.Second)
	eventually(t, "the first keepalive's renewal", func() bool { return s.Remaining() == 9*time.Second })
	// Now every keepalive fails (the server is unreachable). The session
	// retries every second and still ends at +17s. (Idle, the session has two
	// timers armed: its deadline and its next keepalive.)
	keepalive = func() (any, error) { return nil, io.ErrUnexpectedEOF }
	for clk.Now().Sub(opened) < 17*time.Second-100*time.Millisecond {
		clk.Advance(100 * time.Millisecond)
		eventually(t, "the keepalive loop to rest", func() bool { return clk.pending() == 2 })
		if lk.Err() != nil {
			t.Fatalf("lost at +%v, before the deadline +17s: %v", clk.Now().Sub(opened), lk.Err())
		}
	}
	if fs.count("SESSION.KEEPALIVE") < 5 {
		t.Fatalf("keepalives were not retried: %d sent", fs.count("SESSION.KEEPALIVE"))
	}
	clk.Advance(100 * time.Millisecond)
	if lk.Context().Err() == nil || s.Context().Err() == nil {
		t.Fatal("the lock and the session outlived the session's local deadline")
	}
	if !errors.Is(context.Cause(lk.Context()), client.ErrSessionExpired) {
		t.Fatalf("lock's cause %v, want ErrSessionExpired", context.Cause(lk.Context()))
	}
	if _, err := l.Acquire(ctx, "other", client.WithSession(s)); !errors.Is(err, client.ErrSessionExpired) {
		t.Fatalf("Acquire in an ended session = %v", err)
	}
	n := fs.count("SESSION.KEEPALIVE")
	clk.Advance(30 * time.Second)
	if fs.count("SESSION.KEEPALIVE") != n {
		t.Fatal("an ended session kept sending keepalives")
	}

	// A new session only on request, with new tokens.
	keepalive = func() (any, error) { return nil, srvErr("NOSESSION no such session (it expired or was closed)") }
	s2, err := s.Reopen(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lk2, err := l.Acquire(ctx, "res", client.WithSession(s2))
	if err != nil || lk2.Err() != nil {
		t.Fatal(err, lk2.Err())
	}
	eventually(t, "the keepalive loop to rest", func() bool { return clk.pending() == 2 })
	clk.Advance(5 * time.Second)
	eventually(t, "NOSESSION ending the session", func() bool { return lk2.Context().Err() != nil })
	if !errors.Is(context.Cause(lk2.Context()), client.ErrSessionExpired) {
		t.Fatalf("cause %v", context.Cause(lk2.Context()))
	}
}

// After an unknown outcome the client asks LOCK.INFO whether its owner holds
// the lock before it retries: a grant that was applied is returned (and
// never requested twice), one that was not is requested again, and an outcome
// it cannot learn is reported as ErrUnknownOutcome.
func TestAcquireUnknownOutcome(t *testing.T) {
	unknown := []error{srvErr("UNKNOWNOUTCOME the write may or may not have been applied"), io.ErrUnexpectedEOF, context.DeadlineExceeded}
	for _, uerr := range unknown {
		t.Run("applied/"+uerr.Error()[:8], func(t *testing.T) {
			var owner string
			var clk *fakeClock
			l, fs, clk := newFake(t, func(args []string) (any, error) {
				switch args[0] {
				case "LOCK.ACQUIRE":
					owner = args[2]
					clk.Advance(time.Second)
					return nil, uerr
				case "LOCK.INFO":
					return []any{"mode", "exclusive", "limit", int64(1), "holders", []any{
						[]any{"owner", "someone-before", "session", int64(0), "token", int64(40), "ttl_ms", int64(100)},
						[]any{"owner", owner, "session", int64(0), "token", int64(42), "held_for_ms", int64(1000), "ttl_ms", int64(9000), "count", int64(1)},
					}}, nil
				}
				return nil, srvErr("ERR unexpected")
			})
			lk, err := l.Acquire(context.Background(), "res", client.WithTTL(15*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if tok, _ := lk.Token(); tok != 42 {
				t.Fatalf("token %d, want 42 (the applied grant)", tok)
			}
			if n := fs.count("LOCK.ACQUIRE"); n != 1 {
				t.Fatalf("%d acquires sent, want 1", n)
			}
			// The more cautious bound wins: INFO said 9 s were left (less 3 s
			// margin), the send time would have allowed 11 s.
			if got := lk.Remaining(); got != 6*time.Second {
				t.Fatalf("%v left, want 6s", got)
			}
		})
	}
	t.Run("not applied", func(t *testing.T) {
		tries := 0
		l, fs, _ := newFake(t, func(args []string) (any, error) {
			switch args[0] {
			case "LOCK.ACQUIRE":
				if tries++; tries == 1 {
					return nil, srvErr("UNKNOWNOUTCOME the write may or may not have been applied")
				}
				return int64(43), nil
			case "LOCK.INFO":
				return nil, nil // free
			}
			return nil, srvErr("ERR unexpected")
		})
		lk, err := l.Acquire(context.Background(), "res")
		if err != nil {
			t.Fatal(err)
		}
		if tok, _ := lk.Token(); tok != 43 || fs.count("LOCK.INFO") != 1 || fs.count("LOCK.ACQUIRE") != 2 {
			t.Fatalf("token %d after %v", tok, fs.calls)
		}
	})
	t.Run("unresolvable", func(t *testing.T) {
		l, _, _ := newFake(t, func(args []string) (any, error) {
			if args[0] == "LOCK.ACQUIRE" {
				return nil, srvErr("UNKNOWNOUTCOME the write may or may not have been applied")
			}
			return nil, io.ErrUnexpectedEOF
		}, client.WithResolveTimeout(50*time.Millisecond))
		if _, err := l.Acquire(context.Background(), "res"); !errors.Is(err, client.ErrUnknownOutcome) {
			t.Fatalf("Acquire = %v, want ErrUnknownOutcome", err)
		}
	})
	t.Run("TRYAGAIN is not ambiguous", func(t *testing.T) {
		l, fs, _ := newFake(t, func(args []string) (any, error) {
			return nil, srvErr("TRYAGAIN write not applied: no leader with a quorum is ready; safe to retry")
		})
		if _, err := l.Acquire(context.Background(), "res"); !errors.Is(err, client.ErrUnavailable) {
			t.Fatalf("Acquire = %v, want ErrUnavailable", err)
		}
		if fs.count("LOCK.INFO") != 0 {
			t.Fatal("a rejected write was resolved by reading")
		}
	})
}

// Every failure is a documented sentinel.
func TestAcquireErrors(t *testing.T) {
	cases := []struct {
		reply any
		err   error
		want  error
	}{
		{nil, nil, client.ErrNotObtained},
		{nil, srvErr("QUEUEFULL the wait queue of 'res' is full (64 waiters)"), client.ErrQueueFull},
		{nil, srvErr("ERR unknown command 'LOCK.ACQUIRE', with args beginning with: 'res'"), client.ErrNoToken},
	}
	for _, c := range cases {
		l, _, _ := newFake(t, func([]string) (any, error) { return c.reply, c.err })
		_, err := l.Acquire(context.Background(), "res")
		if !errors.Is(err, c.want) {
			t.Errorf("reply %v/%v: Acquire = %v, want %v", c.reply, c.err, err, c.want)
		}
	}
	// NOSESSION ends the session.
	l, _, _ := newFake(t, func(args []string) (any, error) {
		if args[0] == "SESSION.OPEN" {
			return []any{"session_id", int64(3), "ttl_ms", int64(15000), "keepalive_ms", int64(5000)}, nil
		}
		return nil, srvErr("NOSESSION no such session (it expired or was closed)")
	})
	s, err := l.OpenSession(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(context.Background(), "res", client.WithSession(s)); !errors.Is(err, client.ErrSessionExpired) || s.Err() == nil {
		t.Fatalf("Acquire = %v, session %v; want ErrSessionExpired", err, s.Err())
	}
}

// In plain-Redis mode there are no tokens, and the lockd-only options say so.
func TestPlainModeRefusesTokens(t *testing.T) {
	l, fs, _ := newFake(t, func(args []string) (any, error) {
		if args[0] == "SET" {
			return nil, nil // set (no old value)
		}
		return int64(1), nil
	}, client.PlainRedis())
	ctx := context.Background()
	lk, err := l.Acquire(ctx, "res")
	if err != nil {
		t.Fatal(err)
	}
	if tok, err := lk.Token(); !errors.Is(err, client.ErrNoToken) || tok != 0 || !strings.Contains(err.Error(), "plain Redis") {
		t.Fatalf("Token = %d, %v; want ErrNoToken", tok, err)
	}
	if _, err := l.Validate(ctx, "res", 1); !errors.Is(err, client.ErrNoToken) {
		t.Fatalf("Validate = %v", err)
	}
	for _, opt := range []client.AcquireOption{client.Shared(), client.Semaphore(3)} {
		if _, err := l.Acquire(ctx, "x", opt); !errors.Is(err, client.ErrNotSupported) {
			t.Fatalf("Acquire = %v, want ErrNotSupported", err)
		}
	}
	if _, err := l.OpenSession(ctx); !errors.Is(err, client.ErrNotSupported) {
		t.Fatalf("OpenSession = %v, want ErrNotSupported", err)
	}
	if !strings.HasPrefix(fs.calls[0], "SET res ") || !strings.HasSuffix(fs.calls[0], " NX PX 15000 GET") {
		t.Fatalf("acquire sent %q", fs.calls[0])
	}
}
