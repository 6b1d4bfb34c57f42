package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
)

// etcdWorker is one etcd client (-etcd): its own connection to one endpoint,
// its own lease kept alive by a session (every lock it takes is attached to
// the lease), and at most one lock held at a time.
type etcdWorker struct {
	stats
	id   int
	s    *shared
	addr string
	rng  *rand.Rand
	seq  uint64

	c    *clientv3.Client     // nil until setup
	sess *concurrency.Session // nil until setup

	held *etcdLock // nil: holds none
}

// etcdLock is a lock an etcdWorker holds.
type etcdLock struct {
	name  string
	token int64              // txn: the key's CreateRevision, the release's compare
	mu    *concurrency.Mutex // mutex: the mutex to unlock
}

func newEtcdWorker(i int, s *shared, idb [4]byte) *etcdWorker {
	return &etcdWorker{
		id:   i,
		s:    s,
		addr: s.cfg.addrs[i%len(s.cfg.addrs)],
		rng:  rand.New(rand.NewPCG(uint64(i)+1, uint64(idb[0])<<8|uint64(idb[1]))),
	}
}

// etcdConfig is the client configuration for one endpoint: no endpoint
// discovery (the client stays on the endpoint it was given), no log output.
func (cfg *config) etcdConfig(addr string) clientv3.Config {
	return clientv3.Config{
		Endpoints:   []string{addr},
		DialTimeout: cfg.timeout,
		Logger:      zap.NewNop(),
	}
}

// leaseSeconds is -ttl as an etcd lease TTL: whole seconds, rounded up.
func (cfg *config) leaseSeconds() int {
	return int((cfg.ttl + time.Second - 1) / time.Second)
}

// prepareEtcd checks that every endpoint answers a linearizable read, which
// needs a leader and a quorum, within -timeout.
func prepareEtcd(ctx context.Context, cfg *config) error {
	seen := map[string]bool{}
	for _, addr := range cfg.addrs {
		if seen[addr] {
			continue
		}
		seen[addr] = true
		c, err := clientv3.New(cfg.etcdConfig(addr))
		if err != nil {
			return fmt.Errorf("etcd %s: %w", addr, err)
		}
		probeCtx, cancel := context.WithTimeout(ctx, cfg.timeout)
		_, err = c.Get(probeCtx, cfg.prefix+":probe")
		cancel()
		_ = c.Close()
		if err != nil {
			return fmt.Errorf("etcd %s: %w", addr, err)
		}
	}
	return nil
}

// setup connects and takes the client's lease.
func (w *etcdWorker) setup(ctx context.Context) error {
	cfg := w.s.cfg
	c, err := clientv3.New(cfg.etcdConfig(w.addr))
	if err != nil {
		return fmt.Errorf("client %d: etcd %s: %w", w.id, w.addr, err)
	}
	w.c = c
	lease, err := c.Grant(ctx, int64(cfg.leaseSeconds()))
	if err != nil {
		return fmt.Errorf("client %d: etcd %s: lease grant: %w", w.id, w.addr, err)
	}
	sess, err := concurrency.NewSession(c, concurrency.WithLease(lease.ID), concurrency.WithTTL(cfg.leaseSeconds()))
	if err != nil {
		return fmt.Errorf("client %d: etcd %s: session: %w", w.id, w.addr, err)
	}
	w.sess = sess
	return nil
}

// run is the measured loop: acquire (a fresh name of the client's own, or a
// random shared one), hold for -hold, release.
func (w *etcdWorker) run(ctx context.Context) {
	cfg := w.s.cfg
	for {
		if w.s.claim(1) == 0 {
			return
		}
		w.seq++
		name := fmt.Sprintf("%s:u:%d:%d", w.s.keyPrefix, w.id, w.seq)
		if cfg.workload == "contended" {
			name = w.s.contendedName(w.rng.IntN(cfg.names))
		}
		if !w.acquire(ctx, name) {
			continue
		}
		if cfg.hold > 0 {
			select {
			case <-time.After(cfg.hold):
			case <-ctx.Done():
			}
		}
		if w.s.claim(1) == 0 {
			return // cleanup releases it, unmeasured
		}
		w.release(ctx)
	}
}

// acquire takes name, or tries to; it reports whether the client holds it.
func (w *etcdWorker) acquire(ctx context.Context, name string) bool {
	cfg := w.s.cfg
	opCtx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	var (
		token   int64
		granted bool
		err     error
		mu      *concurrency.Mutex
	)
	start := time.Now()
	if cfg.etcd == etcdMutex {
		mu = concurrency.NewMutex(w.sess, name)
		if err = mu.Lock(opCtx); err == nil {
			granted, token = true, mu.Header().Revision
		}
	} else {
		var resp *clientv3.TxnResponse
		resp, err = w.c.Txn(opCtx).
			If(clientv3.Compare(clientv3.CreateRevision(name), "=", 0)).
			Then(clientv3.OpPut(name, fmt.Sprintf("%s:%d:%d", w.s.runID, w.id, w.seq), clientv3.WithLease(w.sess.Lease()))).
			Commit()
		if err == nil {
			// The Put is the transaction's only write: the header's revision
			// is the key's CreateRevision.
			granted, token = resp.Succeeded, resp.Header.Revision
		}
	}
	lat := time.Since(start)
	if err != nil {
		w.fail(w.s, kAcquire, ecOther, err)
		// The write may have been applied: undo it, unmeasured, so that a
		// key of this client's does not block the name until the run ends.
		w.held = &etcdLock{name: name, mu: mu}
		w.releaseQuietly()
		return false
	}
	w.done(w.s, kAcquire, lat)
	if !granted {
		w.taken++
		return false
	}
	w.grants++
	w.s.checkToken(name, token)
	w.held = &etcdLock{name: name, token: token, mu: mu}
	return true
}

// release gives up the held lock, measured.
func (w *etcdWorker) release(ctx context.Context) {
	opCtx, cancel := context.WithTimeout(ctx, w.s.cfg.timeout)
	defer cancel()
	start := time.Now()
	ok, err := w.unlock(opCtx)
	lat := time.Since(start)
	if err != nil {
		w.fail(w.s, kRelease, ecOther, err)
		w.releaseQuietly()
		return
	}
	w.held = nil
	w.done(w.s, kRelease, lat)
	if !ok {
		w.lost++
	}
}

// unlock deletes the held lock's key; false when it was no longer the
// client's (the txn recipe can tell; Mutex.Unlock cannot).
func (w *etcdWorker) unlock(ctx context.Context) (bool, error) {
	h := w.held
	if h.mu != nil {
		return true, h.mu.Unlock(ctx)
	}
	cmp := clientv3.Compare(clientv3.CreateRevision(h.name), "=", h.token)
	if h.token == 0 { // after an error: the key is ours if it carries our lease
		cmp = clientv3.Compare(clientv3.LeaseValue(h.name), "=", w.sess.Lease())
	}
	resp, err := w.c.Txn(ctx).If(cmp).Then(clientv3.OpDelete(h.name)).Commit()
	if err != nil {
		return false, err
	}
	return resp.Succeeded, nil
}

// releaseQuietly deletes the held lock's key, unmeasured and errors ignored:
// if it fails, the lease's revocation at the end removes the key.
func (w *etcdWorker) releaseQuietly() {
	if w.held == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), w.s.cfg.timeout)
	defer cancel()
	_, _ = w.unlock(ctx)
	w.held = nil
}

// cleanup releases what the client holds and revokes its lease, which deletes
// every key attached to it.
func (w *etcdWorker) cleanup() {
	w.releaseQuietly()
	if w.sess != nil {
		if err := w.sess.Close(); err != nil && !errors.Is(err, context.Canceled) {
			w.s.sample(fmt.Sprintf("client %d: revoking its lease: %v", w.id, err))
		}
		w.sess = nil
	}
}

func (w *etcdWorker) close() {
	if w.c != nil {
		_ = w.c.Close()
	}
}

func (w *etcdWorker) counters() *stats { return &w.stats }
