package main

import (
	"context"
	crand "crypto/rand"
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed release.lua
	releaseScript string
	//go:embed keepalive.lua
	keepaliveScript string
)

// errNoFence: -fence against a server whose SET has no FENCE option.
var errNoFence = errors.New("-fence needs lockd")

// errNoLock: -lock against a server that has no LOCK.ACQUIRE.
var errNoLock = errors.New("-lock needs lockd")

// errClass sorts error replies the way a lock client must: TRYAGAIN (rejected
// before it entered the log: safe to retry), UNKNOWNOUTCOME (may or may not
// have been applied: never retry an acquire blindly), anything else.
type errClass int

const (
	ecTryAgain errClass = iota
	ecUnknownOutcome
	ecOther
	numErrClasses
)

var errClassNames = [numErrClasses]string{"TRYAGAIN", "UNKNOWNOUTCOME", "other"}

func classify(err error) errClass {
	msg := err.Error()
	switch {
	case strings.HasPrefix(msg, "TRYAGAIN"):
		return ecTryAgain
	case strings.HasPrefix(msg, "UNKNOWNOUTCOME"):
		return ecUnknownOutcome
	}
	return ecOther
}

// maxErrorSamples bounds the distinct error messages kept for the report.
const maxErrorSamples = 5

// shared is the state every worker of one run sees.
type shared struct {
	cfg          *config
	runID        string
	keyPrefix    string
	ttlMS        int64
	releaseSHA   string
	keepaliveSHA string
	interrupt    context.Context // done on SIGINT/SIGTERM: stop, and ignore the errors it causes
	deadline     time.Time       // zero: none
	budget       atomic.Int64    // operations left to claim when cfg.n > 0

	// Live counters for the progress line (the report merges the workers' own).
	ops  atomic.Uint64
	errs [numErrClasses]atomic.Uint64

	// Fencing check (contended with -fence): the last token seen per name.
	tokens     map[string]*tokenTrack
	checked    atomic.Uint64
	violations atomic.Uint64

	mu         sync.Mutex
	errSamples []string
}

// tokenTrack is the last token granted for one name. A client records its
// token as soon as the grant's reply arrives, before it sends the release; the
// next grant of that name is applied after the release, so it is recorded
// after this one (unless the lease expired in between, which -ttl far above
// the latencies rules out): recorded tokens must strictly increase.
type tokenTrack struct {
	mu   sync.Mutex
	last int64
}

func (s *shared) checkToken(name string, token int64) {
	tr := s.tokens[name]
	if tr == nil {
		return
	}
	tr.mu.Lock()
	last := tr.last
	if token > last {
		tr.last = token
	}
	tr.mu.Unlock()
	s.checked.Add(1)
	if token <= last {
		s.violations.Add(1)
		s.sample(fmt.Sprintf("fencing violation: %s granted with token %d after token %d", name, token, last))
	}
}

func (s *shared) sample(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.errSamples) >= maxErrorSamples {
		return
	}
	for _, m := range s.errSamples {
		if m == msg {
			return
		}
	}
	s.errSamples = append(s.errSamples, msg)
}

// contendedName is the i-th shared name of the contended workload.
func (s *shared) contendedName(i int) string { return fmt.Sprintf("%s:c:%d", s.keyPrefix, i) }

// claim takes up to k operations from what the run has left: none once the
// deadline has passed, the run was interrupted or -n is used up.
func (s *shared) claim(k int) int {
	if s.interrupt.Err() != nil || (!s.deadline.IsZero() && !time.Now().Before(s.deadline)) {
		return 0
	}
	if s.cfg.n == 0 {
		return k
	}
	for {
		left := s.budget.Load()
		if left <= 0 {
			return 0
		}
		take := min(int64(k), left)
		if s.budget.CompareAndSwap(left, left-take) {
			return int(take)
		}
	}
}

// heldLock is a lock a client holds: its name, the owner value it set and,
// with -lock, the token LOCK.RELEASE needs.
type heldLock struct {
	name, owner string
	token       int64
}

// op is one command of a batch.
type op struct {
	kind kind
	lock heldLock
	slot int // mixed: the index in held of the lock it works on, else -1
	cmd  *redis.Cmd
}

// outcome is what an operation's reply meant.
type outcome int

const (
	outError   outcome = iota // an error reply or no reply
	outGranted                // SET NX wrote the value
	outTaken                  // SET NX found the name taken
	outDone                   // release or keepalive applied, read found the lock
	outLost                   // release, keepalive or read found the lock gone or someone else's
)

// stats are one client's counters and histograms; the report merges them.
type stats struct {
	lat       [numKinds]hist
	count     [numKinds]uint64
	errs      [numKinds][numErrClasses]uint64
	grants    uint64
	taken     uint64
	lost      uint64
	fallbacks uint64
	end       time.Time
}

// fail counts an error reply (or no reply) of kind k, unless the run was
// interrupted, which causes errors that are not the server's.
func (st *stats) fail(s *shared, k kind, c errClass, err error) {
	if s.interrupt.Err() != nil {
		return
	}
	st.errs[k][c]++
	s.errs[c].Add(1)
	s.sample(fmt.Sprintf("%s: %v", k, err))
}

// done times a reply of kind k that was not an error.
func (st *stats) done(s *shared, k kind, lat time.Duration) {
	st.lat[k].record(lat)
	st.count[k]++
	s.ops.Add(1)
}

// worker is one RESP client: one connection, its own stats.
type worker struct {
	stats
	id  int
	s   *shared
	c   *redis.Client
	tag string // -direct: the hash tag in its uncontended names ("" otherwise)
	sid int64  // -sessions: the client's session
	rng *rand.Rand
	mix *mixer
	seq uint64

	held []heldLock // oldest first
}

func (w *worker) owner() string {
	w.seq++
	return fmt.Sprintf("%s:%d:%d", w.s.runID, w.id, w.seq)
}

func (w *worker) acquire(ctx context.Context, name, owner string) *redis.Cmd {
	if w.s.cfg.sessions {
		return redis.NewCmd(ctx, "lock.acquire", name, owner, "session", w.sid)
	}
	if w.s.cfg.lock {
		args := []any{"lock.acquire", name, owner, "px", w.s.ttlMS}
		if w.s.cfg.wait > 0 {
			args = append(args, "wait", w.s.cfg.wait.Milliseconds())
		}
		return redis.NewCmd(ctx, args...)
	}
	args := []any{"set", name, owner, "nx", "px", w.s.ttlMS}
	if w.s.cfg.fence {
		args = append(args, "fence")
	}
	return redis.NewCmd(ctx, args...)
}

func (w *worker) newOp(ctx context.Context, k kind, l heldLock, slot int) op {
	o := op{kind: k, lock: l, slot: slot}
	switch k {
	case kAcquire:
		o.cmd = w.acquire(ctx, l.name, l.owner)
	case kTrylock:
		// Another owner's try on a name this client holds.
		o.lock.owner = w.owner()
		o.cmd = w.acquire(ctx, l.name, o.lock.owner)
	case kRelease:
		if w.s.cfg.lockRecords() {
			o.cmd = redis.NewCmd(ctx, "lock.release", l.name, l.token)
		} else {
			o.cmd = redis.NewCmd(ctx, "evalsha", w.s.releaseSHA, 1, l.name, l.owner)
		}
	case kKeepalive:
		if w.s.cfg.sessions {
			o.cmd = redis.NewCmd(ctx, "session.keepalive", w.sid)
			break
		}
		o.cmd = redis.NewCmd(ctx, "evalsha", w.s.keepaliveSHA, 1, l.name, l.owner, w.s.ttlMS)
	case kRead:
		o.cmd = redis.NewCmd(ctx, "pttl", l.name)
	}
	return o
}

// exec sends a batch, pipelined when it holds more than one command, and
// returns how long the round trip took: the latency of each of its commands.
func (w *worker) exec(ctx context.Context, ops []op) time.Duration {
	start := time.Now()
	if len(ops) == 1 {
		_ = w.c.Process(ctx, ops[0].cmd)
	} else {
		_, _ = w.c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := range ops {
				_ = p.Process(ctx, ops[i].cmd)
			}
			return nil
		})
	}
	return time.Since(start)
}

// settle accounts for one reply.
func (w *worker) settle(o *op, lat time.Duration) outcome {
	err := o.cmd.Err()
	if err != nil && !errors.Is(err, redis.Nil) {
		w.fail(w.s, o.kind, classify(err), err)
		return outError
	}
	w.done(w.s, o.kind, lat)
	switch o.kind {
	case kAcquire, kTrylock:
		if err != nil { // nil reply: not written
			w.taken++
			return outTaken
		}
		w.grants++
		if token, ok := o.cmd.Val().(int64); ok {
			o.lock.token = token
			w.s.checkToken(o.lock.name, token)
		}
		return outGranted
	case kRelease, kKeepalive:
		if v, _ := o.cmd.Val().(int64); v == 1 || (o.kind == kKeepalive && w.s.cfg.sessions && v > 0) {
			return outDone // a session keepalive answers the remaining TTL
		}
	case kRead:
		if v, _ := o.cmd.Val().(int64); v != -2 {
			return outDone
		}
	}
	w.lost++
	return outLost
}

// run is the measured loop of one client.
func (w *worker) run(ctx context.Context) {
	switch w.s.cfg.workload {
	case "uncontended", "contended":
		w.runPairs(ctx)
	case "mixed":
		w.runMixed(ctx)
	}
}

// runPairs: a batch of acquires (fresh names of this client's own, or random
// shared ones), then a batch releasing those granted.
func (w *worker) runPairs(ctx context.Context) {
	cfg := w.s.cfg
	for {
		k := w.s.claim(cfg.pipeline)
		if k == 0 {
			return
		}
		ops := make([]op, k)
		for i := range ops {
			var name string
			if cfg.workload == "contended" {
				name = w.s.contendedName(w.rng.IntN(cfg.names))
			} else {
				name = fmt.Sprintf("%s:u:%s%d:%d", w.s.keyPrefix, w.tag, w.id, w.seq+1)
			}
			ops[i] = w.newOp(ctx, kAcquire, heldLock{name: name, owner: w.owner()}, -1)
		}
		lat := w.exec(ctx, ops)
		for i := range ops {
			if w.settle(&ops[i], lat) == outGranted {
				w.held = append(w.held, ops[i].lock)
			}
		}
		if len(w.held) == 0 {
			continue
		}
		if cfg.hold > 0 {
			select {
			case <-time.After(cfg.hold):
			case <-ctx.Done():
			}
		}
		k = w.s.claim(len(w.held))
		if k == 0 {
			return // the rest is released, unmeasured, by cleanup
		}
		ops = ops[:0]
		for _, l := range w.held[:k] {
			ops = append(ops, w.newOp(ctx, kRelease, l, -1))
		}
		lat = w.exec(ctx, ops)
		for i := range ops {
			w.settle(&ops[i], lat)
		}
		w.held = append(w.held[:0], w.held[k:]...)
	}
}

// mixedPool is how many locks a mixed client holds before the run starts, so
// that a batch always finds locks to release, keep alive, read and try.
func mixedPool(pipeline int) int { return 2*pipeline + 2 }

// runMixed deals the seed mix (see planMixed).
func (w *worker) runMixed(ctx context.Context) {
	for {
		k := w.s.claim(w.s.cfg.pipeline)
		if k == 0 {
			return
		}
		plan, fb := planMixed(w.mix, len(w.held), k, w.rng.IntN)
		w.fallbacks += uint64(fb)
		ops := make([]op, len(plan))
		released := 0
		for i, sl := range plan {
			var l heldLock
			if sl.kind == kAcquire {
				l = heldLock{name: fmt.Sprintf("%s:m:%d:%d", w.s.keyPrefix, w.id, w.seq+1), owner: w.owner()}
			} else {
				l = w.held[sl.held]
			}
			if sl.kind == kRelease {
				released++
			}
			ops[i] = w.newOp(ctx, sl.kind, l, sl.held)
		}
		lat := w.exec(ctx, ops)
		var fresh []heldLock
		for i := range ops {
			o := &ops[i]
			if w.settle(o, lat) != outGranted {
				continue
			}
			if o.kind == kAcquire {
				fresh = append(fresh, o.lock)
			} else { // a try-lock won: the lease had ended; the new owner holds it
				w.held[o.slot] = o.lock
			}
		}
		// planMixed releases the oldest locks first.
		w.held = append(w.held[released:], fresh...)
	}
}

// cleanup releases, unmeasured, what the client still holds.
func (w *worker) cleanup() {
	if w.sid != 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*w.s.cfg.timeout)
		defer cancel()
		_ = w.c.Do(ctx, "session.close", w.sid).Err() // releases every lock on it
		w.held, w.sid = nil, 0
		return
	}
	if len(w.held) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*w.s.cfg.timeout)
	defer cancel()
	_, _ = w.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, l := range w.held {
			if w.s.cfg.lock {
				p.Do(ctx, "lock.release", l.name, l.token)
			} else {
				p.EvalSha(ctx, w.s.releaseSHA, []string{l.name}, l.owner)
			}
		}
		return nil
	})
	w.held = nil
}

func sha1hex(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

func (cfg *config) options(addr string) *redis.Options {
	retries := cfg.retries
	if retries == 0 {
		retries = -1 // go-redis: -1 disables retries, 0 means its default (3)
	}
	// One connection per client: pipelines go over it too (no separate
	// pipeline pool), and nothing dials a second one.
	return &redis.Options{
		Addr:             addr,
		Protocol:         cfg.resp,
		PoolSize:         1,
		MaxActiveConns:   1,
		PipelinePoolSize: -1,
		MaxRetries:       retries,
		DialTimeout:      cfg.timeout,
		ReadTimeout:      cfg.timeout,
		WriteTimeout:     cfg.timeout,
		PoolTimeout:      cfg.timeout,
		ConnMaxIdleTime:  -1,
		DisableIdentity:  true,
	}
}

// prepare checks each server once: it answers, has FENCE if -fence asks for
// it, and has the two scripts loaded under the SHAs this program computed.
func prepare(ctx context.Context, cfg *config, s *shared) error {
	s.releaseSHA, s.keepaliveSHA = sha1hex(releaseScript), sha1hex(keepaliveScript)
	seen := map[string]bool{}
	for _, addr := range cfg.addrs {
		if seen[addr] {
			continue
		}
		seen[addr] = true
		if err := prepareAddr(ctx, cfg, s, addr); err != nil {
			return err
		}
	}
	return nil
}

func prepareAddr(ctx context.Context, cfg *config, s *shared, addr string) error {
	c := redis.NewClient(cfg.options(addr))
	defer c.Close()
	if err := c.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("%s: %w", addr, err)
	}
	if cfg.lockRecords() {
		// LOCK.INFO of a free name answers nil on lockd, an error elsewhere.
		if err := c.Do(ctx, "lock.info", s.keyPrefix+":probe").Err(); err != nil && !errors.Is(err, redis.Nil) {
			var rerr redis.Error
			if errors.As(err, &rerr) {
				return fmt.Errorf("%w: %s answered LOCK.INFO with %q, so it is not lockd; run without -lock or -sessions", errNoLock, addr, err.Error())
			}
			return fmt.Errorf("%s: probing LOCK.INFO: %w", addr, err)
		}
	}
	if cfg.fence && !cfg.lock { // LOCK.ACQUIRE always answers a token
		key := s.keyPrefix + ":probe"
		v, err := c.Do(ctx, "set", key, "probe", "nx", "px", 10000, "fence").Result()
		switch {
		case err != nil && !errors.Is(err, redis.Nil):
			var rerr redis.Error
			if errors.As(err, &rerr) {
				return fmt.Errorf("%w: %s answered SET … FENCE with %q, so it is not lockd (FENCE is lockd's fencing-token option); run without -fence", errNoFence, addr, err.Error())
			}
			return fmt.Errorf("%s: probing FENCE: %w", addr, err)
		case err == nil:
			if _, ok := v.(int64); !ok {
				return fmt.Errorf("%w: %s answered SET … FENCE with %v instead of a token; run without -fence", errNoFence, addr, v)
			}
		}
		if err := c.Del(ctx, key).Err(); err != nil {
			return fmt.Errorf("%s: %w", addr, err)
		}
	}
	for _, sc := range []struct{ src, sha string }{{releaseScript, s.releaseSHA}, {keepaliveScript, s.keepaliveSHA}} {
		sha, err := c.ScriptLoad(ctx, sc.src).Result()
		if err != nil {
			return fmt.Errorf("%s: SCRIPT LOAD: %w", addr, err)
		}
		if sha != sc.sha {
			return fmt.Errorf("%s: SCRIPT LOAD answered %s, want the script's SHA1 %s", addr, sha, sc.sha)
		}
	}
	return nil
}

// client is one closed-loop client of a run, whatever protocol it speaks.
type client interface {
	// setup connects (and, for mixed, takes the initial locks) before the
	// clock starts.
	setup(ctx context.Context) error
	// run is the measured loop; it returns when the run is over.
	run(ctx context.Context)
	// cleanup releases, unmeasured, what the client still holds.
	cleanup()
	// close drops the connection.
	close()
	// counters are the client's stats, read once run has returned.
	counters() *stats
}

func (w *worker) counters() *stats { return &w.stats }
func (w *worker) close()           { _ = w.c.Close() }

// bench runs one workload as cfg says and returns its report.
func bench(ctx context.Context, cfg *config, progress io.Writer) (*result, error) {
	var idb [4]byte
	_, _ = crand.Read(idb[:])
	s := &shared{cfg: cfg, runID: hex.EncodeToString(idb[:]), ttlMS: cfg.ttl.Milliseconds(), interrupt: ctx}
	s.keyPrefix = cfg.prefix + ":" + s.runID
	s.budget.Store(cfg.n)
	if cfg.workload == "contended" && cfg.fence {
		s.tokens = make(map[string]*tokenTrack, cfg.names)
		for i := 0; i < cfg.names; i++ {
			s.tokens[s.contendedName(i)] = &tokenTrack{}
		}
	}
	setupCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()

	// Connect every client (and, for mixed, take its initial locks) before the
	// clock starts.
	clients := make([]client, cfg.clients)
	if cfg.etcd != "" {
		if err := prepareEtcd(setupCtx, cfg); err != nil {
			return nil, err
		}
		for i := range clients {
			clients[i] = newEtcdWorker(i, s, idb)
		}
	} else {
		if err := prepare(setupCtx, cfg, s); err != nil {
			return nil, err
		}
		routes := make([]route, len(clients))
		for i := range routes {
			routes[i].addr = cfg.addrs[i%len(cfg.addrs)]
		}
		if cfg.direct {
			var err error
			if routes, err = planDirect(setupCtx, cfg, s); err != nil {
				return nil, err
			}
		}
		for i := range clients {
			clients[i] = &worker{
				id:  i,
				s:   s,
				tag: routes[i].tag,
				c:   redis.NewClient(cfg.options(routes[i].addr)),
				rng: rand.New(rand.NewPCG(uint64(i)+1, uint64(idb[0])<<8|uint64(idb[1]))),
				mix: newMixer(seedMix, i*7),
			}
		}
	}
	defer func() {
		for _, c := range clients {
			c.close()
		}
	}()
	var wg sync.WaitGroup
	setupErrs := make([]error, len(clients))
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			setupErrs[i] = c.setup(setupCtx)
		}()
	}
	wg.Wait()
	if err := errors.Join(setupErrs...); err != nil {
		for _, c := range clients {
			c.cleanup()
		}
		return nil, fmt.Errorf("setting up the clients: %w", err)
	}

	start := time.Now()
	if cfg.duration > 0 {
		s.deadline = start.Add(cfg.duration)
	}
	done := make(chan struct{})
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.run(ctx)
			c.counters().end = time.Now()
			c.cleanup()
		}()
	}
	var pwg sync.WaitGroup
	pwg.Add(1)
	go func() {
		defer pwg.Done()
		reportProgress(s, start, done, progress)
	}()
	wg.Wait()
	close(done)
	pwg.Wait()

	end := start
	all := make([]*stats, len(clients))
	for i, c := range clients {
		all[i] = c.counters()
		if all[i].end.After(end) {
			end = all[i].end
		}
	}
	return summarize(cfg, s, all, end.Sub(start), ctx.Err() != nil), nil
}

// setup connects the client and, for mixed, takes its initial locks.
func (w *worker) setup(ctx context.Context) error {
	if err := w.c.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("client %d: %w", w.id, err)
	}
	if w.s.cfg.workload != "mixed" {
		return nil
	}
	if w.s.cfg.sessions {
		sid, err := openSession(ctx, w.c, w.s.ttlMS, fmt.Sprintf("%s-%d", w.s.runID, w.id))
		if err != nil {
			return fmt.Errorf("client %d: %w", w.id, err)
		}
		w.sid = sid
	}
	for i := 0; i < mixedPool(w.s.cfg.pipeline); i++ {
		l := heldLock{name: fmt.Sprintf("%s:m:%d:%d", w.s.keyPrefix, w.id, w.seq+1), owner: w.owner()}
		cmd := w.acquire(ctx, l.name, l.owner)
		if err := w.c.Process(ctx, cmd); err != nil {
			return fmt.Errorf("client %d: initial lock: %w", w.id, err)
		}
		l.token, _ = cmd.Val().(int64)
		w.held = append(w.held, l)
	}
	return nil
}

// openSession opens a lockd session (SESSION.OPEN TTL ttlMS NAME name) and
// returns its id.
func openSession(ctx context.Context, c *redis.Client, ttlMS int64, name string) (int64, error) {
	v, err := c.Do(ctx, "session.open", "ttl", ttlMS, "name", name).Result()
	if err != nil {
		return 0, fmt.Errorf("SESSION.OPEN: %w", err)
	}
	var kv []any // RESP2: a flat array of pairs; RESP3: a map
	switch m := v.(type) {
	case []any:
		kv = m
	case map[any]any:
		for k, x := range m {
			kv = append(kv, k, x)
		}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if k, _ := kv[i].(string); k == "session_id" {
			if id, ok := kv[i+1].(int64); ok && id > 0 {
				return id, nil
			}
		}
	}
	return 0, fmt.Errorf("SESSION.OPEN answered %v: no session_id", v)
}

// reportProgress prints a line a second until done.
func reportProgress(s *shared, start time.Time, done <-chan struct{}, out io.Writer) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var lastOps uint64
	last := start
	for {
		select {
		case <-done:
			return
		case now := <-t.C:
			ops := s.ops.Load()
			var e [numErrClasses]uint64
			for i := range e {
				e[i] = s.errs[i].Load()
			}
			el := now.Sub(start).Seconds()
			fmt.Fprintf(out, "lockbench: %5.1fs %10d ops %9.0f ops/s (last 1s: %9.0f)  errors %d (TRYAGAIN %d, UNKNOWNOUTCOME %d, other %d)\n",
				el, ops, float64(ops)/el, float64(ops-lastOps)/now.Sub(last).Seconds(),
				e[0]+e[1]+e[2], e[0], e[1], e[2])
			lastOps, last = ops, now
		}
	}
}
