package client

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// acquirePlain takes an efficiency lock on plain Redis: SET name owner NX PX
// ttl GET. A nil reply means this call set it; a reply equal to the owner
// means an earlier attempt of this call did (a retry after a lost reply);
// anything else is another holder. An error whose outcome is unknown is
// resolved with GET. Waiting polls with a growing pause (10–250 ms).
func (l *Locker) acquirePlain(ctx context.Context, name string, o acquireOpts) (*Lock, error) {
	start := l.clock.Now()
	unknowns := 0
	pause := 10 * time.Millisecond
	for {
		sent := l.clock.Now()
		old, err := l.do(ctx, 1, "SET", name, o.owner, "NX", "PX", o.ttl.Milliseconds(), "GET").Text()
		switch classify(err) {
		case outOK:
			if err == redis.Nil {
				return l.granted(ctx, name, o, 0, sent, time.Time{})
			}
			if old == o.owner {
				if lk, ok, err := l.confirmPlain(ctx, name, o); ok || err != nil {
					return lk, err
				}
			}
		case outFinal:
			return nil, fmt.Errorf("client: SET %s NX PX GET (Redis 7.0 or later): %w", name, err)
		case outUnknown:
			unknowns++
			lk, ok, cerr := l.confirmPlain(ctx, name, o)
			switch {
			case !ok && cerr != nil:
				return nil, fmt.Errorf("%w: SET %s: %v; then: %v", ErrUnknownOutcome, name, err, cerr)
			case ok && cerr == nil && ctx.Err() != nil:
				lk.Release(ctx) // the caller gave up meanwhile: leave nothing behind
				return nil, ctx.Err()
			case ok:
				return lk, cerr
			}
			if unknowns >= maxUnknown {
				return nil, fmt.Errorf("%w: SET %s: %v (%d times)", ErrUnknownOutcome, name, err, unknowns)
			}
			continue
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: %w", ErrNotObtained, ctx.Err())
		}
		left := o.wait - l.clock.Now().Sub(start)
		if left <= 0 {
			if err != nil && err != redis.Nil {
				return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
			}
			return nil, fmt.Errorf("%w: %q is held", ErrNotObtained, name)
		}
		if l.sleep(ctx, min(pause, left)) != nil {
			return nil, fmt.Errorf("%w: %w", ErrNotObtained, ctx.Err())
		}
		pause = min(pause*2, 250*time.Millisecond)
	}
}

// confirmPlain settles a grant this owner may already have (an earlier
// attempt's, whose reply was lost, or the owner's own older hold): it renews
// the lease with compare-and-pexpire, so the local deadline counts from this
// request. ok is false when the owner does not hold name.
func (l *Locker) confirmPlain(ctx context.Context, name string, o acquireOpts) (lk *Lock, ok bool, err error) {
	rctx, cancel := l.detached(ctx)
	defer cancel()
	sent := l.clock.Now()
	n, err := extendScript.Run(rctx, l.rc, []string{name}, o.owner, o.ttl.Milliseconds()).Int64()
	if err != nil {
		return nil, false, err
	}
	if n == 0 {
		return nil, false, nil
	}
	lk, err = l.granted(ctx, name, o, 0, sent, time.Time{})
	return lk, true, err
}
