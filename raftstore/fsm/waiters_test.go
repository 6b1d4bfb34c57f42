package fsm

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/lockd/lockd/command"
)

// queued asserts that reply is the QUEUED marker of the entry just applied and
// returns the waiter id.
func (h *harness) queued(cmd string) uint64 {
	h.t.Helper()
	got := h.do(cmd)
	if want := fmt.Sprintf("-QUEUED %d\r\n", h.index); got != want {
		h.t.Fatalf("%s = %q, want %q", cmd, got, want)
	}
	return h.index
}

// expireSession applies the leader's session-expiry entry for session id.
func (h *harness) expireSession(id uint64) {
	h.index++
	h.ks.Apply(h.index, command.Entry{Kind: command.KindSessionExpire, Time: h.now, Wall: wall + h.now, Args: command.SessionExpireArgs(id)})
}

// wakes returns the wakes since the last call as "id=token" strings.
func (h *harness) wakes() string {
	var out []string
	for _, w := range h.ks.TakeWakes() {
		out = append(out, fmt.Sprintf("%d=%d", w.Waiter, w.Token))
	}
	return strings.Join(out, " ")
}

func TestWaitersFIFO(t *testing.T) {
	h := newHarness(t)
	h.do("LOCK.ACQUIRE q holder PX 10000")
	t0 := h.index
	var ids []uint64
	for i := range 5 {
		ids = append(ids, h.queued(fmt.Sprintf("LOCK.ACQUIRE q w%d PX 5000 WAIT 60000", i)))
	}
	// A try-once acquire does not jump the queue, even when it could be granted.
	if got := h.do("LOCK.ACQUIRE q other"); got != nilb {
		t.Fatalf("try-once while others wait = %q", got)
	}
	// A retry by a waiter keeps its place (idempotent).
	if got := h.do("LOCK.ACQUIRE q w2 PX 5000 WAIT 60000"); got != fmt.Sprintf("-QUEUED %d\r\n", ids[2]) {
		t.Fatalf("re-queue = %q", got)
	}
	if got := h.wakes(); got != "" {
		t.Fatalf("wakes before any release: %s", got)
	}
	// Each release hands the lock to the next waiter in the same entry.
	tok := t0
	for i, id := range ids {
		h.now += 10
		if got := h.do(fmt.Sprintf("LOCK.RELEASE q %d", tok)); got != num(1) {
			t.Fatalf("release %d = %q", i, got)
		}
		if got, want := h.wakes(), fmt.Sprintf("%d=%d", id, h.index); got != want {
			t.Fatalf("release %d woke %q, want %q", i, got, want)
		}
		if h.index <= tok {
			t.Fatalf("token %d not above %d", h.index, tok)
		}
		tok = h.index
		if got := h.read(fmt.Sprintf("LOCK.VALIDATE q %d", tok)); got != num(1) {
			t.Fatalf("waiter %d's grant not held: %q", i, got)
		}
		if got := h.read("LOCK.INFO q"); !strings.Contains(got, fmt.Sprintf("w%d", i)) {
			t.Fatalf("LOCK.INFO after hand-over %d = %q", i, got)
		}
	}
}

func TestWaiterExpiryHandsOverOnTick(t *testing.T) {
	h := newHarness(t)
	h.do("LOCK.ACQUIRE e holder PX 1000")
	w := h.queued("LOCK.ACQUIRE e next PX 1000 WAIT 5000")
	if d, ok := h.ks.NextDeadline(); !ok || d != 1000 {
		t.Fatalf("NextDeadline = %d %v, want the lease's end 1000", d, ok)
	}
	h.now = 1000
	h.tick()
	if got, want := h.wakes(), fmt.Sprintf("%d=%d", w, h.index); got != want {
		t.Fatalf("tick woke %q, want %q", got, want)
	}
}

func TestWaitersSkipDeadAndTimedOut(t *testing.T) {
	h := newHarness(t)
	h.do("SESSION.OPEN TTL 5000")
	sid := h.index
	h.do("LOCK.ACQUIRE d holder PX 1000")
	short := h.queued("LOCK.ACQUIRE d short WAIT 100")
	sess := h.queued(fmt.Sprintf("LOCK.ACQUIRE d sess SESSION %d WAIT 60000", sid))
	last := h.queued("LOCK.ACQUIRE d last WAIT 60000")
	// The session ends: its waiter leaves the queue (and is told).
	h.do(fmt.Sprintf("SESSION.CLOSE %d", sid))
	if got, want := h.wakes(), fmt.Sprintf("%d=0", sess); got != want {
		t.Fatalf("session close woke %q, want %q", got, want)
	}
	h.now = 1000 // the lease ends; "short" stopped waiting at 100
	h.tick()
	if got, want := h.wakes(), fmt.Sprintf("%d=0 %d=%d", short, last, h.index); got != want {
		t.Fatalf("tick woke %q, want %q", got, want)
	}
}

func TestSharedWriterFairness(t *testing.T) {
	h := newHarness(t)
	h.do("LOCK.ACQUIRE f r1 SHARED")
	r1 := h.index
	// A writer queues behind the reader; a reader behind the writer waits too.
	wr := h.queued("LOCK.ACQUIRE f writer WAIT 60000")
	r2 := h.queued("LOCK.ACQUIRE f r2 SHARED WAIT 60000")
	r3 := h.queued("LOCK.ACQUIRE f r3 SHARED WAIT 60000")
	if got := h.do("LOCK.ACQUIRE f r4 SHARED"); got != nilb {
		t.Fatalf("reader jumped a waiting writer: %q", got)
	}
	h.do(fmt.Sprintf("LOCK.RELEASE f %d", r1))
	wtok := h.index
	if got, want := h.wakes(), fmt.Sprintf("%d=%d", wr, wtok); got != want {
		t.Fatalf("release woke %q, want the writer %q", got, want)
	}
	// The writer releases: both readers are granted, one per entry (each grant's
	// token is its entry's index), the second by the tick that follows at once.
	h.do(fmt.Sprintf("LOCK.RELEASE f %d", wtok))
	if got, want := h.wakes(), fmt.Sprintf("%d=%d", r2, h.index); got != want {
		t.Fatalf("release woke %q, want %q", got, want)
	}
	if !h.ks.GrantReady() {
		t.Fatal("a second reader can be granted but GrantReady is false")
	}
	h.tick()
	if got, want := h.wakes(), fmt.Sprintf("%d=%d", r3, h.index); got != want {
		t.Fatalf("tick woke %q, want %q", got, want)
	}
	if h.ks.GrantReady() {
		t.Fatal("GrantReady with nobody left to grant")
	}
	if got := h.read("LOCK.INFO f"); strings.Count(got, "owner") != 2 || !strings.Contains(got, "shared") {
		t.Fatalf("LOCK.INFO = %q", got)
	}
}

func TestSemaphoreWaiters(t *testing.T) {
	h := newHarness(t)
	h.do("LOCK.ACQUIRE s a LIMIT 2 PX 1000")
	h.do("LOCK.ACQUIRE s b LIMIT 2 PX 1000")
	c := h.queued("LOCK.ACQUIRE s c LIMIT 2 WAIT 60000")
	d := h.queued("LOCK.ACQUIRE s d LIMIT 2 WAIT 60000")
	if got := h.do("LOCK.ACQUIRE s e LIMIT 3 WAIT 60000"); !strings.HasPrefix(got, "-ERR LIMIT") {
		t.Fatalf("limit mismatch while waiting = %q", got)
	}
	// Both leases end together: two slots, two grants with tokens of their own.
	h.now = 1000
	h.tick()
	first := h.index
	h.tick()
	if got, want := h.wakes(), fmt.Sprintf("%d=%d %d=%d", c, first, d, h.index); got != want {
		t.Fatalf("ticks woke %q, want %q", got, want)
	}
}

func TestQueueFullAndCancel(t *testing.T) {
	h := newHarness(t)
	h.do("NAMESPACE.SET small/ MAXWAITERS 2")
	h.do("LOCK.ACQUIRE small/x holder PX 300")
	hold := h.index
	a := h.queued("LOCK.ACQUIRE small/x a WAIT 60000")
	b := h.queued("LOCK.ACQUIRE small/x b WAIT 60000")
	if got := h.do("LOCK.ACQUIRE small/x c WAIT 60000"); !strings.HasPrefix(got, "-QUEUEFULL the wait queue of 'small/x' is full (2 waiters); retry in 300 ms") {
		t.Fatalf("third waiter = %q", got)
	}
	// The default cap is 500.
	h.do("LOCK.ACQUIRE big holder")
	for i := range 500 {
		h.queued(fmt.Sprintf("LOCK.ACQUIRE big w%d WAIT 60000", i))
	}
	if got := h.do("LOCK.ACQUIRE big w500 WAIT 60000"); !strings.HasPrefix(got, "-QUEUEFULL") {
		t.Fatalf("501st waiter = %q", got)
	}
	// A cancelled waiter leaves the queue: the next release skips it.
	if got := h.do(fmt.Sprintf("LOCK.CANCEL small/x %d", a)); got != nilb {
		t.Fatalf("cancel of a queued waiter = %q", got)
	}
	h.do(fmt.Sprintf("LOCK.RELEASE small/x %d", hold))
	granted := h.index
	if got, want := h.wakes(), fmt.Sprintf("%d=%d", b, granted); got != want {
		t.Fatalf("release woke %q, want %q", got, want)
	}
	// Cancelling a waiter that was granted answers its token; RELEASE gives it back.
	if got := h.do(fmt.Sprintf("LOCK.CANCEL small/x %d", b)); got != num(int64(granted)) {
		t.Fatalf("cancel after the grant = %q", got)
	}
	if got := h.read(fmt.Sprintf("LOCK.VALIDATE small/x %d", granted)); got != num(1) {
		t.Fatalf("cancel without RELEASE gave the grant back: %q", got)
	}
	if got := h.do(fmt.Sprintf("LOCK.CANCEL small/x %d RELEASE", b)); got != num(int64(granted)) {
		t.Fatalf("cancel RELEASE = %q", got)
	}
	if got := h.read("EXISTS small/x"); got != num(0) {
		t.Fatalf("lock still exists after its only holder was cancelled: %q", got)
	}
	// Transactions and scripts never block: WAIT is a try-once there.
	h.do("LOCK.ACQUIRE t holder")
	if got := h.do(`EVAL return(redis.call('LOCK.ACQUIRE','t','x','WAIT','1000')) 0`); got != nilb {
		t.Fatalf("WAIT in a script = %q", got)
	}
}

func TestLockDelay(t *testing.T) {
	h := newHarness(t)
	h.do("NAMESPACE.SET pay/ LOCKDELAY 5000")
	// Freed by expiry: unavailable for the lock-delay.
	h.do("LOCK.ACQUIRE pay/a w1 PX 1000")
	h.now = 1000
	if got := h.do("LOCK.ACQUIRE pay/a w2"); got != nilb {
		t.Fatalf("acquire during lock-delay = %q", got)
	}
	if got := h.read("LOCK.INFO pay/a"); !strings.Contains(got, "lock_delay_ms\r\n:5000") {
		t.Fatalf("LOCK.INFO during lock-delay = %q", got)
	}
	w := h.queued("LOCK.ACQUIRE pay/a w3 WAIT 60000")
	if d, _ := h.ks.NextDeadline(); d != 6000 {
		t.Fatalf("NextDeadline = %d, want the delay's end 6000", d)
	}
	h.now = 6000
	h.tick()
	if got, want := h.wakes(), fmt.Sprintf("%d=%d", w, h.index); got != want {
		t.Fatalf("tick after lock-delay woke %q, want %q", got, want)
	}
	// Freed by release: available at once.
	h.do(fmt.Sprintf("LOCK.RELEASE pay/a %d", h.index))
	if got := h.do("LOCK.ACQUIRE pay/a w4"); got != num(int64(h.index)) {
		t.Fatalf("acquire after a clean release = %q", got)
	}
	// Freed by session expiry (a failure): delayed; by SESSION.CLOSE: not.
	h.do("SESSION.OPEN")
	s1 := h.index
	h.do(fmt.Sprintf("LOCK.ACQUIRE pay/b x SESSION %d", s1))
	h.expireSession(s1)
	if got := h.do("LOCK.ACQUIRE pay/b y"); got != nilb {
		t.Fatalf("acquire right after the holder's session expired = %q", got)
	}
	h.do("SESSION.OPEN")
	s2 := h.index
	h.do(fmt.Sprintf("LOCK.ACQUIRE pay/c x SESSION %d", s2))
	h.do(fmt.Sprintf("SESSION.CLOSE %d", s2))
	if got := h.do("LOCK.ACQUIRE pay/c y"); got != num(int64(h.index)) {
		t.Fatalf("acquire after SESSION.CLOSE = %q", got)
	}
	// Outside the namespace: no delay.
	h.do("LOCK.ACQUIRE other w1 PX 10")
	h.now += 10
	if got := h.do("LOCK.ACQUIRE other w2"); got != num(int64(h.index)) {
		t.Fatalf("acquire outside the namespace = %q", got)
	}
}

func TestSessionExpiryHandsOver(t *testing.T) {
	h := newHarness(t)
	h.do("SESSION.OPEN")
	s := h.index
	for _, n := range []string{"a", "b", "c"} {
		h.do(fmt.Sprintf("LOCK.ACQUIRE %s holder SESSION %d", n, s))
	}
	wa := h.queued("LOCK.ACQUIRE a next WAIT 60000")
	wc := h.queued("LOCK.ACQUIRE c next WAIT 60000")
	h.expireSession(s)
	if got, want := h.wakes(), fmt.Sprintf("%d=%d %d=%d", wa, h.index, wc, h.index); got != want {
		t.Fatalf("session expiry woke %q, want %q (every lock handed over in the same entry)", got, want)
	}
	if got := h.read("EXISTS b"); got != num(0) {
		t.Fatalf("b still held after the session expired: %q", got)
	}
}

func TestNamespaces(t *testing.T) {
	h := newHarness(t)
	for _, c := range []struct{ cmd, want string }{
		{"NAMESPACE.SET pay/ MAXTTL 30000 DEFAULTTTL 10000 RATE 100 SAFETY correctness", ok},
		{"NAMESPACE.SET pay/eu/ LOCKDELAY 2000", ok},
		{"NAMESPACE.SET pay/ DEFAULTTTL 40000", "-ERR DEFAULTTTL must not exceed MAXTTL\r\n"},
		{"NAMESPACE.SET pay/ LOCKDELAY 60001", "-ERR LOCKDELAY must be between 0 and 60000 ms\r\n"},
		{"NAMESPACE.SET pay/ SAFETY maybe", "-ERR SAFETY must be 'efficiency' or 'correctness'\r\n"},
		{"NAMESPACE.SET pay/ MAXTTL", "-ERR syntax error\r\n"},
		{"LOCK.ACQUIRE pay/x w", "-ERR namespace 'pay/' is declared SAFETY correctness but names no fenced resource: set one with NAMESPACE.SET pay/ FENCEDBY <resource>\r\n"},
		{"NAMESPACE.SET pay/ FENCEDBY postgres:payouts.fence", ok},
		{"LOCK.ACQUIRE pay/x w PX 40000", "-ERR PX 40000 exceeds the MAXTTL of namespace 'pay/' (30000 ms)\r\n"},
		{"LOCK.ACQUIRE pay/eu/x w", num(10)}, // the longest prefix (pay/eu/) has no safety class
		{"NAMESPACE.LIST", "*2\r\n$4\r\npay/\r\n$7\r\npay/eu/\r\n"},
		{"NAMESPACE.DEL pay/eu/", num(1)},
		{"NAMESPACE.DEL pay/eu/", num(0)},
	} {
		if got := h.do(c.cmd); got != c.want {
			t.Fatalf("%s = %q, want %q", c.cmd, got, c.want)
		}
	}
	// The default TTL applies without PX.
	h.do("LOCK.ACQUIRE pay/y w")
	if got := h.read("LOCK.INFO pay/y"); !strings.Contains(got, "ttl_ms\r\n:10000") {
		t.Fatalf("LOCK.INFO = %q", got)
	}
	if got := h.read("NAMESPACE.GET pay/"); !strings.Contains(got, "maxttl\r\n:30000") || !strings.Contains(got, "postgres:payouts.fence") || !strings.Contains(got, "maxwaiters\r\n:500") {
		t.Fatalf("NAMESPACE.GET = %q", got)
	}
	if got := h.read("NAMESPACE.GET nope/"); got != nilb {
		t.Fatalf("NAMESPACE.GET of an unknown prefix = %q", got)
	}
	// Sessions opened for a namespace are bounded by it.
	h.do("SESSION.OPEN TTL 60000 NAMESPACE pay/x")
	if got := h.read(fmt.Sprintf("SESSION.KEEPALIVE %d", h.index)); got != num(30000) {
		t.Fatalf("session TTL in pay/ = %q, want MAXTTL 30000", got)
	}
}

func TestWaitersSurviveSnapshot(t *testing.T) {
	h := newHarness(t)
	h.do("NAMESPACE.SET ns/ LOCKDELAY 100 MAXWAITERS 7")
	h.do("LOCK.ACQUIRE ns/a holder PX 1000")
	first := h.index
	w1 := h.queued("LOCK.ACQUIRE ns/a w1 WAIT 60000")
	w2 := h.queued("LOCK.ACQUIRE ns/a w2 SHARED WAIT 60000")
	var buf bytes.Buffer
	if _, err := h.ks.Snapshot().WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	ks := New()
	if err := ks.Restore(&buf); err != nil {
		t.Fatal(err)
	}
	before := h.read("LOCK.INFO ns/a")
	h.ks = ks
	if got := h.read("LOCK.INFO ns/a"); got != before {
		t.Fatalf("LOCK.INFO after restore = %q, want %q", got, before)
	}
	if got := h.read("NAMESPACE.GET ns/"); !strings.Contains(got, "maxwaiters\r\n:7") {
		t.Fatalf("namespace after restore = %q", got)
	}
	h.do(fmt.Sprintf("LOCK.RELEASE ns/a %d", first))
	if got, want := h.wakes(), fmt.Sprintf("%d=%d", w1, h.index); got != want {
		t.Fatalf("after restore, release woke %q, want %q", got, want)
	}
	_ = w2
}

func TestLockStats(t *testing.T) {
	h := newHarness(t)
	h.do("NAMESPACE.SET pay/ LOCKDELAY 100 MAXWAITERS 1")
	h.do("LOCK.ACQUIRE pay/a w1 PX 50")
	t1 := h.index
	h.queued("LOCK.ACQUIRE pay/a w2 PX 50 WAIT 1000")
	h.do("LOCK.ACQUIRE pay/a w3 WAIT 1000") // QUEUEFULL
	if st := h.ks.LockStats(); st.Locks != 1 || st.Holders != 1 || st.Waiters != 1 || st.Grants != 1 || st.QueueFull != 1 {
		t.Fatalf("stats after queueing: %+v", st)
	}
	h.now = 50
	h.tick()                                       // w1's lease ends: lock-delay, then w2 is granted at 150
	h.do(fmt.Sprintf("LOCK.RELEASE pay/a %d", t1)) // w1 was still working
	h.do("LOCK.ACQUIRE pay/a w4")                  // refused: lock-delay
	h.now = 150
	h.tick()
	h.do("LOCK.ACQUIRE x o PX 10")
	tx := h.index
	h.now = 1000
	h.tick() // x expires and is removed by the tick
	h.do(fmt.Sprintf("LOCK.EXTEND x %d 10", tx))
	st := h.ks.LockStats()
	if st.Grants != 3 || st.Expiries != 3 || st.DelayHits != 1 || st.LateOps["pay/"] != 1 || st.LateOps[""] != 1 {
		t.Fatalf("stats = %+v, want 3 grants, 3 expiries (w1, w2, x), 1 delay hit, one late op in pay/ and one outside", st)
	}
	if st.Locks != 0 || st.Holders != 0 || st.Waiters != 0 {
		t.Fatalf("gauges after everything ended: %+v", st)
	}
}

func TestEventFilter(t *testing.T) {
	h := newHarness(t)
	listening := false
	h.ks.SetEventFilter(func(channel string) bool { return listening && channel == EventsChannel })
	h.do("LOCK.ACQUIRE a o")
	if ev := h.ks.TakeEvents(); len(ev) != 0 {
		t.Fatalf("events built with nobody listening: %v", ev)
	}
	listening = true
	h.do("LOCK.ACQUIRE b o")
	if ev := h.ks.TakeEvents(); len(ev) != 1 || string(ev[0].Channel) != EventsChannel {
		t.Fatalf("events with a listener: %v", ev)
	}
	h.do("SET k v PX 1")
	h.now += 10
	h.tick()
	for _, ev := range h.ks.TakeEvents() {
		if string(ev.Channel) == KeyeventExpired {
			t.Fatal("a keyspace notification was built though nobody listens to it")
		}
	}
}

// TestWaitLastsAtLeastWait: log time counts whole milliseconds, so a waiter
// queued at log time t may have arrived up to 1 ms after t began; its wait is
// still running at t+WAIT and ends at the next millisecond.
func TestWaitLastsAtLeastWait(t *testing.T) {
	h := newHarness(t)
	h.do("LOCK.ACQUIRE w holder PX 60000")
	start := h.now
	id := h.queued("LOCK.ACQUIRE w b WAIT 200")
	h.now = start + 200
	h.tick()
	if got := h.wakes(); got != "" {
		t.Fatalf("tick at WAIT woke %q, want nothing yet", got)
	}
	h.now = start + 201
	h.tick()
	if got, want := h.wakes(), fmt.Sprintf("%d=0", id); got != want {
		t.Fatalf("tick 1 ms after WAIT woke %q, want %q", got, want)
	}
}

// TestWouldWaitAgreesWithApply: the guess the leader lingers on (a blocking
// acquire will join the queue) matches what applying the acquire answers,
// in each state a name can be in.
func TestWouldWaitAgreesWithApply(t *testing.T) {
	h := newHarness(t)
	// check asks WouldWait about cmd, then applies it and compares.
	check := func(cmd string, want bool) {
		t.Helper()
		op, _, err := command.Parse(args(cmd))
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		acq, ok := op.(command.LockAcquire)
		if !ok {
			t.Fatalf("%s: not an acquire", cmd)
		}
		guess := h.ks.WouldWait(acq, h.now)
		got := h.do(cmd)
		if queued := strings.HasPrefix(got, "-QUEUED"); queued != guess || guess != want {
			t.Fatalf("%s: WouldWait %v, applied %q (want queued: %v)", cmd, guess, got, want)
		}
	}
	h.do("NAMESPACE.SET slow/ LOCKDELAY 5000")
	h.do("SET str value")

	check("LOCK.ACQUIRE free a PX 1000 WAIT 1000", false)   // absent: granted
	check("LOCK.ACQUIRE free b PX 1000 WAIT 1000", true)    // held by another owner
	check("LOCK.ACQUIRE free a PX 1000 WAIT 1000", false)   // the holder again: answered at once
	check("LOCK.ACQUIRE str a WAIT 1000", false)            // another type: WRONGTYPE
	check("LOCK.ACQUIRE sh r1 SHARED WAIT 1000", false)     // shared beside shared
	check("LOCK.ACQUIRE sh r2 SHARED WAIT 1000", false)     //
	check("LOCK.ACQUIRE sh w1 WAIT 1000", true)             // a writer behind readers
	check("LOCK.ACQUIRE sh r3 SHARED WAIT 1000", true)      // a reader behind a waiting writer
	check("LOCK.ACQUIRE sem s1 LIMIT 2 WAIT 1000", false)   // a semaphore slot
	check("LOCK.ACQUIRE sem s2 LIMIT 2 WAIT 1000", false)   // the last slot
	check("LOCK.ACQUIRE sem s3 LIMIT 3 WAIT 1000", false)   // LIMIT mismatch: refused at once
	check("LOCK.ACQUIRE sem s3 LIMIT 2 WAIT 1000", true)    // full
	check("LOCK.ACQUIRE slow/x a PX 10 WAIT 1000", false)   // granted; expires at 10
	h.now += 10                                             // the lease ends: lock-delay until 5010
	check("LOCK.ACQUIRE slow/x b PX 1000 WAIT 60000", true) // waits out the lock-delay
	h.now += 2000                                           // every wait above has ended by now
	check("LOCK.ACQUIRE free c PX 1000 WAIT 1000", false)   // the lease and the waiter are gone
	check("LOCK.ACQUIRE sh w2 WAIT 1000", true)             // the readers hold on (no TTL)
	if op, _, _ := command.Parse(args("LOCK.ACQUIRE sh w3")); h.ks.WouldWait(op.(command.LockAcquire), h.now) {
		t.Fatal("WouldWait for a try-once acquire")
	}
}
