package group

import (
	"fmt"
	"sync"
	"time"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/outcome"
	"github.com/lockd/lockd/raftstore/fsm"
	"github.com/lockd/lockd/resp"
	"golang.org/x/time/rate"
)

// rateLimits enforces the namespaces' RATE (operations per second) on the
// leader, which sees every strict operation: a token bucket per namespace that
// holds one second's worth. Limits are not replicated state: a new leader starts
// with full buckets. The bucket is golang.org/x/time/rate's Limiter, a well-kept
// implementation of the same bucket; nothing measured argues for hand-writing it.
type rateLimits struct {
	mu      sync.Mutex
	buckets map[string]*rate.Limiter
}

// take spends one operation of ns at now, or says how long until one is free
// without spending anything. A bucket is full when first used; when ns's RATE
// has changed, the bucket refills at the new rate and holds the new second's
// worth from now on.
func (l *rateLimits) take(ns fsm.Namespace, now time.Time) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.buckets == nil {
		l.buckets = map[string]*rate.Limiter{}
	}
	limit, burst := rate.Limit(ns.Rate), int(ns.Rate)
	b, ok := l.buckets[ns.Prefix]
	if !ok {
		b = rate.NewLimiter(limit, burst)
		l.buckets[ns.Prefix] = b
	} else if b.Limit() != limit {
		b.SetLimitAt(now, limit)
		b.SetBurstAt(now, burst)
	}
	if b.AllowN(now, 1) {
		return 0, true
	}
	return time.Duration((1 - b.TokensAt(now)) / float64(limit) * float64(time.Second)), false
}

// rateLimited answers RATELIMITED when r's key lies in a namespace that has used
// up its rate; ok is false when r may run.
func (s *Store) rateLimited(r command.Request) (resp.Value, bool) {
	ns, ok := s.namespaceOf(r.Args)
	if !ok || ns.Rate <= 0 {
		return resp.Value{}, false
	}
	wait, allowed := s.rates.take(ns, s.now())
	if allowed {
		return resp.Value{}, false
	}
	s.metrics.rateLimited.Add(1)
	ms := max(1, wait.Milliseconds())
	v := resp.Failed(outcome.RateLimited, fmt.Sprintf("RATELIMITED namespace '%s' allows %d operations per second; retry in %d ms", ns.Prefix, ns.Rate, ms))
	v.Int = ms // the HTTP door's Retry-After
	return v, true
}

// namespaceOf returns the namespace the first key of args lies in, if any;
// with no namespace set it spares finding the key (1.5% of a single node's
// CPU under load).
func (s *Store) namespaceOf(args [][]byte) (fsm.Namespace, bool) {
	if !s.m.namespaces.Load() {
		return fsm.Namespace{}, false
	}
	s.m.mu.RLock()
	defer s.m.mu.RUnlock()
	if !s.m.ks.HasNamespaces() {
		return fsm.Namespace{}, false
	}
	key := command.FirstKey(args)
	if key == nil {
		return fsm.Namespace{}, false
	}
	return s.m.ks.NamespaceFor(key)
}
