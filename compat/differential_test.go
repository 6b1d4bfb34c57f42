package compat

import (
	"bufio"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The seeded random differential test: random command sequences over a few
// keys, sent to redis-server and to the server under test on fresh
// connections over a flushed keyspace, every raw reply compared byte for byte
// (through the same normalisers as the case tables, for TTL replies). On a
// divergence the sequence is shrunk (commands dropped one at a time while the
// same command still diverges) and printed as redis-cli lines with both
// replies and the seed that reproduces it.
//
// The generator is a table, fuzzRows: one row per command (or per recipe of
// several commands) with its argument generator, so that a new family is one
// row per command. It sends only commands that lockd implements (a command
// Redis has and lockd has not would diverge on every use) and nothing whose
// reply depends on timing: every expiry is at least 100000 seconds away, or in
// the past; every relative TTL is unique in its sequence and grows with the
// step (see fuzzGen.ttlSeconds), so NX/XX/GT/LT comparisons between two
// expiries never depend on how many milliseconds passed; remaining TTLs are
// read only at top level (not inside MULTI or scripts) and compared within the
// suite's tolerance.
//
// Knobs (environment; `make compat-fuzz SEED=… N=… LEN=… DURATION=…` sets them):
//
//	COMPAT_FUZZ_SEED      base seed (default 1; "random": from the clock, printed)
//	COMPAT_FUZZ_N         sequences (default 200)
//	COMPAT_FUZZ_LEN       commands per sequence (default 30)
//	COMPAT_FUZZ_SEQ       run only this sequence of the seed (what a failure prints)
//	COMPAT_FUZZ_DURATION  stop starting sequences after this long (default 3m)
//
// Sequence i of seed s is generated from rand.NewPCG(s, i) alone, so it is the
// same whatever ran before it; odd sequences run under RESP3, even ones RESP2.

// fuzzConfig is one run's knobs.
type fuzzConfig struct {
	seed     uint64
	n        int           // sequences
	length   int           // commands per sequence (a recipe counts as one)
	only     int           // the one sequence to run; -1: all
	duration time.Duration // no new sequence starts after this
}

// Bounds of the shrinker and of the report.
const (
	fuzzShrinkRounds   = 8                // passes over the sequence
	fuzzShrinkReplays  = 400              // replays per divergence
	fuzzShrinkTime     = 90 * time.Second // per divergence
	fuzzMaxReports     = 5                // distinct divergences reported before the run stops
	fuzzDefaultSeed    = 1
	fuzzDefaultN       = 200
	fuzzDefaultLen     = 30
	fuzzDefaultTimeout = 3 * time.Minute
)

func fuzzConfigFromEnv(t *testing.T) fuzzConfig {
	t.Helper()
	c := fuzzConfig{seed: fuzzDefaultSeed, n: fuzzDefaultN, length: fuzzDefaultLen, only: -1, duration: fuzzDefaultTimeout}
	num := func(name string, min, max int, dst *int) {
		s := os.Getenv(name)
		if s == "" {
			return
		}
		v, err := strconv.Atoi(s)
		if err != nil || v < min || v > max {
			t.Fatalf("%s=%q: want an integer in [%d, %d]", name, s, min, max)
		}
		*dst = v
	}
	switch s := os.Getenv("COMPAT_FUZZ_SEED"); s {
	case "":
	case "random":
		c.seed = uint64(time.Now().UnixNano())
	default:
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("COMPAT_FUZZ_SEED=%q: want an unsigned integer or \"random\"", s)
		}
		c.seed = v
	}
	num("COMPAT_FUZZ_N", 1, 100_000_000, &c.n)
	num("COMPAT_FUZZ_LEN", 1, 10_000, &c.length)
	num("COMPAT_FUZZ_SEQ", 0, 100_000_000, &c.only)
	if s := os.Getenv("COMPAT_FUZZ_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			t.Fatalf("COMPAT_FUZZ_DURATION=%q: want a positive Go duration (90s, 10m)", s)
		}
		c.duration = d
	}
	return c
}

// TestDifferential runs the seeded random sequences (see the top of this file).
// A short run with a fixed seed is part of `make test`; `make compat-fuzz`
// runs a long one.
func TestDifferential(t *testing.T) {
	cfg := fuzzConfigFromEnv(t)
	e := newEnv(t)
	t.Logf("differential: seed %d, %d sequences of %d commands (rerun: COMPAT_FUZZ_SEED=%d)", cfg.seed, cfg.n, cfg.length, cfg.seed)
	start := time.Now()
	first, last := 0, cfg.n-1
	if cfg.only >= 0 {
		first, last = cfg.only, cfg.only
	}
	seen := map[string]bool{} // signatures already reported
	sent, ran, diverged := 0, 0, 0
	for i := first; i <= last; i++ {
		if time.Since(start) > cfg.duration {
			t.Logf("differential: stopping after %v (COMPAT_FUZZ_DURATION): %d of %d sequences ran", cfg.duration, ran, cfg.n)
			break
		}
		proto := 2 + i%2
		steps := genSequence(cfg.seed, i, cfg.length)
		sent += len(steps)
		ran++
		d := e.fuzzReplay(t, proto, steps)
		if d == nil {
			continue
		}
		diverged++
		shrunk, d, replays := e.fuzzShrink(t, proto, steps, d)
		sig := d.signature()
		if seen[sig] {
			t.Logf("differential: sequence %d diverges the same way as one already reported (%s)", i, sig)
			continue
		}
		seen[sig] = true
		again := 0
		for k := 0; k < 2; k++ {
			if e.fuzzReplay(t, proto, shrunk) != nil {
				again++
			}
		}
		t.Error(fuzzReport(e.other.name, cfg.seed, i, proto, len(steps), shrunk, d, replays, again))
		if len(seen) >= fuzzMaxReports {
			t.Logf("differential: stopping after %d distinct divergences", len(seen))
			break
		}
	}
	t.Logf("differential: %d sequences, %d steps in %v; %d diverged (seed %d)", ran, sent, time.Since(start).Round(time.Millisecond), diverged, cfg.seed)
}

// ---------------------------------------------------------------- running and shrinking

// fuzzDivergence is the first step of a sequence whose replies differ.
type fuzzDivergence struct {
	at           int // index of the step; -1: the HELLO 3 of a connection's setup
	desc         string
	redis, other [][]outcome // every step's outcomes on each side, up to and including at
	norm         string
}

// signature names the divergence's shape, to report each shape once: the
// first line where the two replies differ once digits are masked (or, when
// only digits differ, the first differing line), on each side.
func (d *fuzzDivergence) signature() string {
	if d.at < 0 {
		return "HELLO 3"
	}
	join := func(os []outcome) string {
		var b strings.Builder
		for _, o := range os {
			b.WriteString(o.String())
		}
		return b.String()
	}
	r, o := join(d.redis[d.at]), join(d.other[d.at])
	mask := func(s string) string {
		return strings.Map(func(c rune) rune {
			if c >= '0' && c <= '9' {
				return '#'
			}
			return c
		}, s)
	}
	rl, ol := strings.Split(r, `\r\n`), strings.Split(o, `\r\n`)
	for _, f := range []func(string) string{mask, func(s string) string { return s }} {
		for i := 0; i < len(rl) || i < len(ol); i++ {
			var x, y string
			if i < len(rl) {
				x = f(rl[i])
			}
			if i < len(ol) {
				y = f(ol[i])
			}
			if x != y {
				return x + " | " + y
			}
		}
	}
	return r + " | " + o
}

// fuzzStepName is the step's command, upper case.
func fuzzStepName(s step) string {
	switch {
	case s.scan:
		return "SCAN"
	case len(s.args) == 0:
		return "PIPELINE"
	}
	return strings.ToUpper(s.args[0])
}

// fuzzReplay runs steps on fresh connections (HELLO 3 first under RESP3)
// over a flushed keyspace and an empty script cache, and returns the first
// divergence, or nil when every reply matched.
func (e *env) fuzzReplay(t *testing.T, proto int, steps []step) *fuzzDivergence {
	t.Helper()
	for _, s := range []*side{e.redis, e.other} {
		s.flush(t)
		s.admin.send(multibulk("SCRIPT", "FLUSH"))
		if o := s.admin.read(replyTimeout); string(o.raw) != "+OK\r\n" {
			t.Fatalf("%s: SCRIPT FLUSH answered %v", s.name, o)
		}
	}
	conns := map[int]*pair{}
	defer func() {
		for _, p := range conns {
			p.redis.close()
			p.other.close()
		}
	}()
	var ro, oo [][]outcome
	for i, s := range steps {
		p := conns[s.conn]
		if p == nil {
			rc, err := dial(e.redis.addr)
			if err != nil {
				t.Fatalf("redis: dial: %v", err)
			}
			oc, err := dial(e.other.addr)
			if err != nil {
				rc.close()
				t.Fatalf("%s: dial: %v", e.other.name, err)
			}
			p = &pair{redis: rc, other: oc}
			conns[s.conn] = p
			if proto == 3 {
				hello := cmd("HELLO", "3").with(helloIdentity)
				if r, o, ok := fuzzStep(p, hello); !ok {
					return &fuzzDivergence{at: -1, desc: hello.describe(hello.args), redis: [][]outcome{r}, other: [][]outcome{o}, norm: hello.norm.name}
				}
			}
		}
		r, o, ok := fuzzStep(p, s)
		ro, oo = append(ro, r), append(oo, o)
		if !ok {
			return &fuzzDivergence{at: i, desc: s.describe(expand(s.args, time.Now())), redis: ro, other: oo, norm: s.norm.name}
		}
		if p.redis.dead != "" || p.other.dead != "" {
			return nil // both closed alike (a divergence would have been returned)
		}
	}
	return nil
}

// fuzzStep runs one step on both servers at once, as env.compare does, and
// reports whether the outcomes match (through the step's normaliser).
func fuzzStep(p *pair, s step) (ro, oo []outcome, ok bool) {
	args := expand(s.args, time.Now())
	done := make(chan struct{})
	go func() { oo = s.run(p.other, args); close(done) }()
	ro = s.run(p.redis, args)
	<-done
	for i := range ro {
		r, o := ro[i], oo[i]
		if s.norm.fn != nil && r.end == "" && o.end == "" {
			r.raw, o.raw = s.norm.fn(r.raw, o.raw)
		}
		if !r.equal(o) {
			return ro, oo, false
		}
	}
	return ro, oo, true
}

// fuzzShrink drops steps one at a time while the same command still
// diverges, in at most fuzzShrinkRounds passes, fuzzShrinkReplays replays and
// fuzzShrinkTime. It returns the shortest diverging sequence found (ending at
// its diverging step), that divergence, and the replays it took.
func (e *env) fuzzShrink(t *testing.T, proto int, steps []step, d *fuzzDivergence) ([]step, *fuzzDivergence, int) {
	if d.at < 0 {
		return nil, d, 0
	}
	cur := append([]step(nil), steps[:d.at+1]...)
	want := fuzzStepName(cur[d.at])
	deadline := time.Now().Add(fuzzShrinkTime)
	replays := 0
	for round := 0; round < fuzzShrinkRounds; round++ {
		changed := false
		for i := len(cur) - 1; i >= 0; i-- {
			if replays >= fuzzShrinkReplays || time.Now().After(deadline) {
				return cur, d, replays
			}
			if i >= len(cur) {
				continue
			}
			cand := append(append([]step(nil), cur[:i]...), cur[i+1:]...)
			if len(cand) == 0 {
				continue
			}
			replays++
			d2 := e.fuzzReplay(t, proto, cand)
			if d2 == nil || d2.at < 0 || fuzzStepName(cand[d2.at]) != want {
				continue
			}
			cur, d, changed = cand[:d2.at+1], d2, true
		}
		if !changed {
			break
		}
	}
	return cur, d, replays
}

// fuzzReport renders a shrunk divergence: the seed and sequence that rerun
// it, the commands as redis-cli lines with Redis's reply to each, and both
// replies to the diverging one.
func fuzzReport(other string, seed uint64, seq, proto, total int, steps []step, d *fuzzDivergence, replays, again int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "differential: seed %d sequence %d (RESP%d): %s differs from redis-server\n", seed, seq, proto, other)
	if d.at < 0 {
		fmt.Fprintf(&b, "\tthe connection's HELLO 3 differs\n\tredis: %v\n\t%s: %v\n", d.redis[0], other, d.other[0])
	} else {
		twoConns := false
		for _, s := range steps {
			twoConns = twoConns || s.conn != 0
		}
		fmt.Fprintf(&b, "minimal reproducer: %d of %d commands (%d shrink replays; diverged again in %d of 2 replays)", len(steps), total, replays, again)
		if twoConns {
			b.WriteString("; [1] and [2] are two client connections")
		}
		b.WriteString(":\n")
		if proto == 3 {
			b.WriteString("\tHELLO 3   (on each connection first)\n")
		}
		for i, s := range steps {
			line := "\t"
			if twoConns {
				line += fmt.Sprintf("[%d] ", s.conn+1)
			}
			line += cliLine(s)
			if i < d.at {
				b.WriteString(line + "\n\t\t-> " + outcomesString(d.redis, i) + "\n")
				continue
			}
			fmt.Fprintf(&b, "%s\n\t\tredis: %s\n\t\t%s: %s\n", line, outcomesString(d.redis, i), other, outcomesString(d.other, i))
			if d.norm != "" {
				fmt.Fprintf(&b, "\t\t(compared through normaliser %s)\n", d.norm)
			}
		}
		for _, s := range steps {
			if strings.Contains(strings.Join(s.args, " "), "${unix") {
				b.WriteString("\t(${unix+N}: the current Unix time in seconds plus N; ${unixms+N}: in milliseconds)\n")
				break
			}
		}
	}
	fmt.Fprintf(&b, "rerun: COMPAT_FUZZ_SEED=%d COMPAT_FUZZ_SEQ=%d go test -count=1 ./compat -run 'TestDifferential$' -v", seed, seq)
	return b.String()
}

// outcomesString is step i's outcomes (one per reply the step reads).
func outcomesString(os [][]outcome, i int) string {
	if i >= len(os) {
		return "<not run>"
	}
	parts := make([]string, len(os[i]))
	for j, o := range os[i] {
		parts[j] = o.String()
	}
	return strings.Join(parts, ", ")
}

// cliLine renders a step as a redis-cli command line (its quoting: "…" with
// \xHH, \n, \r, \t, \" and \\ escapes).
func cliLine(s step) string {
	if s.raw != "" {
		return "(raw bytes) " + strconv.Quote(s.raw)
	}
	parts := make([]string, 0, len(s.args)+1)
	if s.scan {
		parts = append(parts, "SCAN", "<cursor>")
	}
	for _, a := range s.args {
		parts = append(parts, cliQuote(a))
	}
	line := strings.Join(parts, " ")
	if s.scan {
		line += "   (every page until cursor 0; the key sets compared)"
	}
	return line
}

func cliQuote(s string) string {
	plain := s != ""
	for i := 0; i < len(s) && plain; i++ {
		c := s[i]
		plain = c > ' ' && c < 0x7f && c != '"' && c != '\'' && c != '\\'
	}
	if plain {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < ' ' || c >= 0x7f:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// ---------------------------------------------------------------- the generator

// fuzzGen generates one sequence. Connection 0 runs everything; connection 1
// (the "other client") runs only plain keyspace commands, to change what
// connection 0 watches. inMulti models whether connection 0 is inside MULTI,
// so that replies that depend on timing or order are only generated where
// their normaliser applies (at top level).
type fuzzGen struct {
	r       *rand.Rand
	idx     int // the step being generated: makes TTLs unique and growing
	inMulti bool
	steps   []step
	rows    []fuzzRow // fuzzRows (a field: the recipes in fuzzRows draw rows)
}

// fuzzRow is one command (or recipe) of the generator.
type fuzzRow struct {
	name   string // the command; lower case for a row that is not one command
	weight int
	// topOnly: never queued in MULTI: the reply depends on timing (TTL) or
	// its order is not Redis's (KEYS, SCAN), so it is normalised, which
	// inside EXEC's array it would not be; or lockd differs there (TODO).
	topOnly bool
	// other: the row may run on the second connection (a plain keyspace
	// command that changes or reads keys; never MULTI/WATCH state).
	other bool
	norm  normalizer
	// args returns one command; steps (instead) appends a recipe of steps.
	args  func(g *fuzzGen) []string
	steps func(g *fuzzGen)
}

// The keys, some sharing a hash tag (so that they stay in one slot on a
// cluster), the values (binary, empty, numeric, integer limits), hash fields
// and integer arguments. Values stay at most 64 bytes and hashes small: a
// larger hash is a hash table in Redis, whose field order is its own.
var (
	fuzzKeys   = []string{"a", "b", "{t}x", "{t}y"}
	fuzzValues = []string{
		"", "v", "w", "x y", "0", "1", "-1", "42", "007", "3.5", "1e3", " 1", "10 ",
		"9223372036854775807", "-9223372036854775808", "9223372036854775808", "-9223372036854775809",
		"\x00\xff\r\nbin", "tok-1", "tok-2", strings.Repeat("z", 60),
	}
	fuzzFields = []string{"f", "g", "h", ""}
	fuzzInts   = []string{
		"0", "1", "-1", "2", "5", "-5", "100", "-100", "9223372036854775807", "-9223372036854775808",
		"9223372036854775808", "abc", "1.5", "", " 1", "0x10",
	}
	// fuzzBadTTLs are expiry arguments that are errors, zero or in the past
	// (the key is deleted at once): never a short positive time.
	fuzzBadTTLs = []string{"0", "-1", "-100", "abc", "", "1.5", "9223372036854775807",
		"-9223372036854775808", "9223372036854775", "9223372036854776"}
)

// Scripts of the generator: fixed, so that EVALSHA of their SHA1 can hit.
// argv says what each ARGV is: v a value, f a hash field, n an integer
// argument, s and t an expiry in seconds and in milliseconds.
var fuzzScripts = []struct {
	src   string
	nkeys int
	argv  string
}{
	{cad, 1, "v"}, // compare-and-delete: the lock release
	{`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end`, 1, "vt"},
	{`return redis.call("incr", KEYS[1])`, 1, ""},
	{`return redis.pcall("incr", KEYS[1])`, 1, ""},
	{`return redis.pcall("hgetall", KEYS[1])`, 1, ""},
	{`return {redis.call("exists", KEYS[1]), redis.call("type", KEYS[1])["ok"]}`, 1, ""},
	{`redis.call("set", KEYS[1], ARGV[1]) return redis.call("get", KEYS[1])`, 1, "v"},
	{`return redis.call("del", KEYS[1], KEYS[2])`, 2, ""},
	{`return redis.call("hset", KEYS[1], ARGV[1], ARGV[2])`, 1, "fv"},
	{`return redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[2])`, 1, "vt"},
	{`return redis.call("get", KEYS[1], KEYS[2])`, 2, ""},
	{`return redis.call("hget", KEYS[1], ARGV[1])`, 1, "f"},
	{`return redis.call("incrby", KEYS[1], ARGV[1])`, 1, "n"},
	{`return redis.call("expire", KEYS[1], ARGV[1])`, 1, "s"},
	{`return redis.call("getdel", KEYS[1])`, 1, ""},
	{`return redis.call("setex", KEYS[1], 0, "x")`, 1, ""},
	{`return redis.pcall("hincrby", KEYS[1], ARGV[1], ARGV[2])`, 1, "fn"},
	{`return redis.call("nosuch")`, 0, ""},
	{`return 1 +`, 0, ""},
	{`error("boom")`, 0, ""},
	{`return {1, 2.5, "x", true, false, nil, 3}`, 0, ""},
}

func scriptSHA(src string) string {
	h := sha1.Sum([]byte(src))
	return hex.EncodeToString(h[:])
}

func (g *fuzzGen) pick(list []string) string         { return list[g.r.IntN(len(list))] }
func (g *fuzzGen) pickArgs(list [][]string) []string { return list[g.r.IntN(len(list))] }
func (g *fuzzGen) key() string                       { return g.pick(fuzzKeys) }
func (g *fuzzGen) val() string                       { return g.pick(fuzzValues) }
func (g *fuzzGen) field() string                     { return g.pick(fuzzFields) }
func (g *fuzzGen) score() string {
	return g.pick([]string{"0", "1", "2.5", "-1", "1e3", "-inf", "+inf", "(1", "abc", "nan", ""})
}
func (g *fuzzGen) num() string       { return g.pick(fuzzInts) }
func (g *fuzzGen) chance(n int) bool { return g.r.IntN(n) == 0 }

// ttlSeconds is a valid relative expiry, unique in the sequence and larger
// for a later step within a tier: (tier*100000 + step) seconds, tier 1..3.
// Two expiries a sequence compares (GT, LT) differ by at least a second, far
// more than the time between the two commands.
func (g *fuzzGen) ttlSeconds() int64 { return int64(1+g.r.IntN(3))*100000 + int64(g.idx) }

// expiry is a relative expiry argument in unit ms or s: usually valid, at
// times one of fuzzBadTTLs.
func (g *fuzzGen) expiry(ms bool) string {
	if g.chance(6) {
		return g.pick(fuzzBadTTLs)
	}
	s := g.ttlSeconds()
	if ms {
		return strconv.FormatInt(s*1000, 10)
	}
	return strconv.FormatInt(s, 10)
}

// absExpiry is an absolute expiry: usually the current time plus a unique
// TTL (a placeholder expanded when the step runs, the same for both
// servers), at times in the past or invalid.
func (g *fuzzGen) absExpiry(ms bool) string {
	switch g.r.IntN(8) {
	case 0:
		return "1" // long past: the key is deleted
	case 1:
		return g.pick(fuzzBadTTLs)
	}
	s := g.ttlSeconds()
	if ms {
		return "${unixms+" + strconv.FormatInt(s*1000, 10) + "}"
	}
	return "${unix+" + strconv.FormatInt(s, 10) + "}"
}

// setAbsExpiry is absExpiry for SET, never in the past: Redis 7.0 keeps a
// key SET with a past EXAT/PXAT until its expiry cycle deletes it, and DBSIZE
// counts it until then (lockd deletes it at once).
func (g *fuzzGen) setAbsExpiry(ms bool) string {
	for {
		if a := g.absExpiry(ms); a != "1" && !strings.HasPrefix(a, "-") {
			return a
		}
	}
}

// expireFlags is zero or one (rarely two, a syntax error) of NX XX GT LT.
func (g *fuzzGen) expireFlags() []string {
	flags := []string{"NX", "XX", "GT", "LT", "nx", "gt"}
	switch g.r.IntN(10) {
	case 0, 1, 2, 3:
		return nil
	case 4:
		return []string{g.pick(flags), g.pick(flags)}
	case 5:
		return []string{g.pick([]string{"FOO", g.val()})}
	}
	return []string{g.pick(flags)}
}

func (g *fuzzGen) keys(min, max int) []string {
	n := min + g.r.IntN(max-min+1)
	out := make([]string, n)
	for i := range out {
		out[i] = g.key()
	}
	return out
}

func cmdArgs(name string, rest ...[]string) []string {
	out := []string{name}
	for _, r := range rest {
		out = append(out, r...)
	}
	return out
}

func one(s ...string) []string { return s }

// fuzzRows is the generator's table: a new command is one row (its name,
// weight and argument generator), added once lockd matches Redis on it.
var fuzzRows = []fuzzRow{
	// strings
	{name: "SET", weight: 8, other: true, args: func(g *fuzzGen) []string {
		var opts [][]string
		switch g.r.IntN(4) {
		case 0:
			opts = append(opts, one(g.pick([]string{"NX", "XX", "nx"})))
		case 1:
			if g.chance(4) {
				opts = append(opts, one("NX"), one("XX")) // syntax error
			}
		}
		if g.chance(3) {
			opts = append(opts, one("GET"))
		}
		switch g.r.IntN(8) {
		case 0:
			opts = append(opts, one("EX", g.expiry(false)))
		case 1:
			opts = append(opts, one("PX", g.expiry(true)))
		case 2:
			opts = append(opts, one("EXAT", g.setAbsExpiry(false)))
		case 3:
			opts = append(opts, one("PXAT", g.setAbsExpiry(true)))
		case 4:
			opts = append(opts, one("KEEPTTL"))
		case 5:
			if g.chance(3) {
				opts = append(opts, one(g.pick([]string{"EX", "PX", "FOO", "KEEPTTL EX"}))) // syntax errors
			}
		}
		g.r.Shuffle(len(opts), func(i, j int) { opts[i], opts[j] = opts[j], opts[i] })
		return cmdArgs("SET", append([][]string{{g.key(), g.val()}}, opts...)...)
	}},
	{name: "SETNX", weight: 2, other: true, args: func(g *fuzzGen) []string { return one("SETNX", g.key(), g.val()) }},
	{name: "SETEX", weight: 2, other: true, args: func(g *fuzzGen) []string { return one("SETEX", g.key(), g.expiry(false), g.val()) }},
	{name: "PSETEX", weight: 2, other: true, args: func(g *fuzzGen) []string { return one("PSETEX", g.key(), g.expiry(true), g.val()) }},
	{name: "GET", weight: 6, other: true, args: func(g *fuzzGen) []string { return one("GET", g.key()) }},
	{name: "GETDEL", weight: 3, other: true, args: func(g *fuzzGen) []string { return one("GETDEL", g.key()) }},
	{name: "GETEX", weight: 3, args: func(g *fuzzGen) []string {
		k := g.key()
		switch g.r.IntN(7) {
		case 0:
			return one("GETEX", k, "EX", g.expiry(false))
		case 1:
			return one("GETEX", k, "PX", g.expiry(true))
		case 2:
			return one("GETEX", k, "EXAT", g.absExpiry(false))
		case 3:
			return one("GETEX", k, "PXAT", g.absExpiry(true))
		case 4:
			return one("GETEX", k, "PERSIST")
		case 5:
			return one("GETEX", k, g.pick([]string{"EX", "FOO", "PERSIST", "KEEPTTL"}), g.pick([]string{"100000", "PERSIST"}))
		}
		return one("GETEX", k)
	}},
	{name: "MGET", weight: 2, args: func(g *fuzzGen) []string { return cmdArgs("MGET", g.keys(1, 4)) }},
	{name: "MSET", weight: 2, other: true, args: func(g *fuzzGen) []string {
		args := []string{"MSET"}
		for _, k := range g.keys(1, 3) {
			args = append(args, k, g.val())
		}
		if g.chance(8) {
			args = args[:len(args)-1] // odd: wrong number of arguments
		}
		return args
	}},
	{name: "MSETNX", weight: 1, other: true, args: func(g *fuzzGen) []string {
		args := []string{"MSETNX"}
		for _, k := range g.keys(1, 3) {
			args = append(args, k, g.val())
		}
		return args
	}},
	{name: "GETRANGE", weight: 2, args: func(g *fuzzGen) []string { return one("GETRANGE", g.key(), g.num(), g.num()) }},
	{name: "STRLEN", weight: 2, args: func(g *fuzzGen) []string { return one("STRLEN", g.key()) }},
	// counters
	{name: "INCR", weight: 4, other: true, args: func(g *fuzzGen) []string { return one("INCR", g.key()) }},
	{name: "DECR", weight: 2, other: true, args: func(g *fuzzGen) []string { return one("DECR", g.key()) }},
	{name: "INCRBY", weight: 3, other: true, args: func(g *fuzzGen) []string { return one("INCRBY", g.key(), g.num()) }},
	{name: "DECRBY", weight: 2, other: true, args: func(g *fuzzGen) []string { return one("DECRBY", g.key(), g.num()) }},
	// keys
	{name: "DEL", weight: 5, other: true, args: func(g *fuzzGen) []string { return cmdArgs("DEL", g.keys(1, 3)) }},
	{name: "UNLINK", weight: 1, other: true, args: func(g *fuzzGen) []string { return cmdArgs("UNLINK", g.keys(1, 2)) }},
	{name: "EXISTS", weight: 3, args: func(g *fuzzGen) []string { return cmdArgs("EXISTS", g.keys(1, 4)) }},
	{name: "TYPE", weight: 3, args: func(g *fuzzGen) []string { return one("TYPE", g.key()) }},
	{name: "DBSIZE", weight: 1, args: func(g *fuzzGen) []string { return one("DBSIZE") }},
	{name: "KEYS", weight: 1, topOnly: true, norm: unordered, args: func(g *fuzzGen) []string {
		return one("KEYS", g.pick([]string{"*", "{t}*", "?", "[ab]", "\\{*"}))
	}},
	{name: "SCAN", weight: 1, topOnly: true, steps: func(g *fuzzGen) {
		var opts []string
		if g.chance(2) {
			opts = append(opts, "MATCH", g.pick([]string{"*", "{t}*", "a*"}))
		}
		if g.chance(2) {
			opts = append(opts, "COUNT", g.pick([]string{"1", "2", "100"}))
		}
		// Not TYPE none: Redis 7.0 returns a key past its expiry that is
		// not yet deleted under it (its type lookup finds no key), which
		// depends on when its expiry cycle runs.
		if g.chance(3) {
			opts = append(opts, "TYPE", g.pick([]string{"string", "hash", "STRING"}))
		}
		g.add(scan(opts...))
	}},
	// expiry
	{name: "EXPIRE", weight: 4, other: true, args: func(g *fuzzGen) []string {
		return cmdArgs("EXPIRE", one(g.key(), g.expiry(false)), g.expireFlags())
	}},
	{name: "PEXPIRE", weight: 3, other: true, args: func(g *fuzzGen) []string {
		return cmdArgs("PEXPIRE", one(g.key(), g.expiry(true)), g.expireFlags())
	}},
	{name: "EXPIREAT", weight: 2, other: true, args: func(g *fuzzGen) []string {
		return cmdArgs("EXPIREAT", one(g.key(), g.absExpiry(false)), g.expireFlags())
	}},
	{name: "PEXPIREAT", weight: 2, other: true, args: func(g *fuzzGen) []string {
		return cmdArgs("PEXPIREAT", one(g.key(), g.absExpiry(true)), g.expireFlags())
	}},
	{name: "PERSIST", weight: 2, other: true, args: func(g *fuzzGen) []string { return one("PERSIST", g.key()) }},
	{name: "TTL", weight: 2, topOnly: true, norm: ttlSeconds, args: func(g *fuzzGen) []string { return one("TTL", g.key()) }},
	{name: "PTTL", weight: 2, topOnly: true, norm: ttlMillis, args: func(g *fuzzGen) []string { return one("PTTL", g.key()) }},
	{name: "EXPIRETIME", weight: 1, topOnly: true, norm: unixSeconds, args: func(g *fuzzGen) []string { return one("EXPIRETIME", g.key()) }},
	{name: "PEXPIRETIME", weight: 1, topOnly: true, norm: unixMillis, args: func(g *fuzzGen) []string { return one("PEXPIRETIME", g.key()) }},
	// hashes
	{name: "HSET", weight: 5, other: true, args: func(g *fuzzGen) []string {
		args := []string{"HSET", g.key()}
		for n := 1 + g.r.IntN(2); n > 0; n-- {
			args = append(args, g.field(), g.val())
		}
		if g.chance(10) {
			args = args[:len(args)-1]
		}
		return args
	}},
	{name: "HSETNX", weight: 1, other: true, args: func(g *fuzzGen) []string { return one("HSETNX", g.key(), g.field(), g.val()) }},
	{name: "HMSET", weight: 1, other: true, args: func(g *fuzzGen) []string { return one("HMSET", g.key(), g.field(), g.val()) }},
	{name: "HGET", weight: 2, args: func(g *fuzzGen) []string { return one("HGET", g.key(), g.field()) }},
	{name: "HMGET", weight: 1, args: func(g *fuzzGen) []string { return one("HMGET", g.key(), g.field(), g.field()) }},
	{name: "HGETALL", weight: 3, args: func(g *fuzzGen) []string { return one("HGETALL", g.key()) }},
	{name: "HDEL", weight: 3, other: true, args: func(g *fuzzGen) []string {
		args := []string{"HDEL", g.key(), g.field()}
		for n := g.r.IntN(3); n > 0; n-- {
			args = append(args, g.field())
		}
		return args
	}},
	{name: "HEXISTS", weight: 1, args: func(g *fuzzGen) []string { return one("HEXISTS", g.key(), g.field()) }},
	{name: "HINCRBY", weight: 2, other: true, args: func(g *fuzzGen) []string { return one("HINCRBY", g.key(), g.field(), g.num()) }},
	{name: "HLEN", weight: 1, args: func(g *fuzzGen) []string { return one("HLEN", g.key()) }},
	{name: "HKEYS", weight: 1, args: func(g *fuzzGen) []string { return one("HKEYS", g.key()) }},
	{name: "HVALS", weight: 1, args: func(g *fuzzGen) []string { return one("HVALS", g.key()) }},
	// sorted sets
	{name: "ZADD", weight: 3, other: true, args: func(g *fuzzGen) []string {
		args := []string{"ZADD", g.key()}
		if g.chance(3) {
			args = append(args, g.pick([]string{"NX", "XX", "GT", "LT", "CH", "INCR"}))
		}
		for n := 1 + g.r.IntN(2); n > 0; n-- {
			args = append(args, g.score(), g.field())
		}
		return args
	}},
	{name: "ZINCRBY", weight: 1, other: true, args: func(g *fuzzGen) []string { return one("ZINCRBY", g.key(), g.score(), g.field()) }},
	{name: "ZREM", weight: 1, other: true, args: func(g *fuzzGen) []string { return one("ZREM", g.key(), g.field(), g.field()) }},
	{name: "ZCARD", weight: 1, args: func(g *fuzzGen) []string { return one("ZCARD", g.key()) }},
	{name: "ZSCORE", weight: 1, args: func(g *fuzzGen) []string { return one("ZSCORE", g.key(), g.field()) }},
	{name: "ZRANK", weight: 1, args: func(g *fuzzGen) []string { return one(g.pick([]string{"ZRANK", "ZREVRANK"}), g.key(), g.field()) }},
	{name: "ZRANGE", weight: 2, args: func(g *fuzzGen) []string {
		if g.chance(2) {
			return cmdArgs("ZRANGE", one(g.key(), g.score(), g.score(), "BYSCORE"), g.pickArgs([][]string{nil, {"WITHSCORES"}, {"REV"}, {"LIMIT", "0", "1"}}))
		}
		return cmdArgs("ZRANGE", one(g.key(), g.num(), g.num()), g.pickArgs([][]string{nil, {"WITHSCORES"}, {"REV"}}))
	}},
	{name: "ZPOPMIN", weight: 1, other: true, args: func(g *fuzzGen) []string {
		return cmdArgs(g.pick([]string{"ZPOPMIN", "ZPOPMAX"}), one(g.key()), g.pickArgs([][]string{nil, {"2"}, {"0"}, {"-1"}}))
	}},
	{name: "ZREMRANGEBYSCORE", weight: 1, other: true, args: func(g *fuzzGen) []string {
		return one("ZREMRANGEBYSCORE", g.key(), g.score(), g.score())
	}},
	// lists
	{name: "LPUSH", weight: 3, other: true, args: func(g *fuzzGen) []string {
		return cmdArgs(g.pick([]string{"LPUSH", "RPUSH", "LPUSHX", "RPUSHX"}), one(g.key(), g.val()), g.pickArgs([][]string{nil, {"v"}}))
	}},
	{name: "LPOP", weight: 2, other: true, args: func(g *fuzzGen) []string {
		return cmdArgs(g.pick([]string{"LPOP", "RPOP"}), one(g.key()), g.pickArgs([][]string{nil, nil, {"2"}, {"0"}, {"-1"}}))
	}},
	{name: "LLEN", weight: 1, args: func(g *fuzzGen) []string { return one("LLEN", g.key()) }},
	{name: "LRANGE", weight: 2, args: func(g *fuzzGen) []string { return one("LRANGE", g.key(), g.num(), g.num()) }},
	{name: "LINDEX", weight: 1, args: func(g *fuzzGen) []string { return one("LINDEX", g.key(), g.num()) }},
	{name: "LREM", weight: 1, other: true, args: func(g *fuzzGen) []string { return one("LREM", g.key(), g.num(), g.val()) }},
	{name: "LTRIM", weight: 1, other: true, args: func(g *fuzzGen) []string { return one("LTRIM", g.key(), g.num(), g.num()) }},
	{name: "LMOVE", weight: 1, other: true, args: func(g *fuzzGen) []string {
		return one("LMOVE", g.key(), g.key(), g.pick([]string{"LEFT", "RIGHT"}), g.pick([]string{"LEFT", "RIGHT", "UP"}))
	}},
	// connection-level commands whose reply is fixed
	{name: "PING", weight: 1, args: func(g *fuzzGen) []string { return cmdArgs("PING", g.keys(0, 1)) }},
	{name: "ECHO", weight: 1, args: func(g *fuzzGen) []string { return one("ECHO", g.val()) }},
	{name: "unknown", weight: 1, args: func(g *fuzzGen) []string { return one("NOSUCHCMD", g.key(), g.val()) }},
	{name: "subcommand", weight: 1, args: func(g *fuzzGen) []string {
		// Not COMMAND: a bare COMMAND (a truncated one) lists commands in
		// Redis's hash-table order.
		return one(g.pick([]string{"SCRIPT", "CLIENT", "CONFIG", "ACL"}), g.val(), g.key())
	}},
	{name: "SELECT", weight: 1, args: func(g *fuzzGen) []string { return one("SELECT", g.pick([]string{"0", "x", "-1", ""})) }},
	{name: "CLIENT", weight: 1, args: func(g *fuzzGen) []string {
		if g.chance(2) {
			return one("CLIENT", "GETNAME")
		}
		return one("CLIENT", "SETNAME", g.pick([]string{"n1", "", "a b", "x\ny"}))
	}},
	// HELLO switches the connection's protocol mid-sequence (or fails).
	{name: "HELLO", weight: 1, topOnly: true, norm: helloIdentity, args: func(g *fuzzGen) []string {
		return cmdArgs("HELLO", one(g.pick([]string{"2", "3", "4", "x", "1"})), g.pickArgs([][]string{nil, nil, {"SETNAME", "n2"}, {"SETNAME"}, {"FOO"}}))
	}},
	{name: "FLUSHALL", weight: 1, other: true, args: func(g *fuzzGen) []string {
		return cmdArgs("FLUSHALL", g.pickArgs([][]string{nil, nil, {"SYNC"}, {"ASYNC"}, {"x"}}))
	}},
	{name: "pipeline", weight: 2, steps: (*fuzzGen).pipeline},
	// scripts
	{name: "EVAL", weight: 6, args: func(g *fuzzGen) []string {
		s := fuzzScripts[g.r.IntN(len(fuzzScripts))]
		return g.scriptCall(g.pick([]string{"EVAL", "EVAL", "EVAL", "EVAL_RO"}), s.src, s.nkeys, s.argv)
	}},
	{name: "EVALSHA", weight: 2, args: func(g *fuzzGen) []string {
		s := fuzzScripts[g.r.IntN(len(fuzzScripts))]
		sha := scriptSHA(s.src)
		if g.chance(6) {
			sha = g.pick([]string{"abc", strings.ToUpper(sha), "0123456789012345678901234567890123456789"})
		}
		return g.scriptCall(g.pick([]string{"EVALSHA", "EVALSHA", "EVALSHA_RO"}), sha, s.nkeys, s.argv)
	}},
	{name: "SCRIPT", weight: 1, args: func(g *fuzzGen) []string {
		s := fuzzScripts[g.r.IntN(len(fuzzScripts))]
		return one("SCRIPT", "EXISTS", scriptSHA(s.src), scriptSHA(cad))
	}},
	// topOnly: inside MULTI lockd loads a queued SCRIPT LOAD before the
	// transaction, so an EVALSHA queued before it in the same transaction
	// runs where Redis answers NOSCRIPT (docs/compatibility.md).
	{name: "SCRIPT", weight: 1, topOnly: true, args: func(g *fuzzGen) []string {
		s := fuzzScripts[g.r.IntN(len(fuzzScripts))]
		return one("SCRIPT", "LOAD", s.src)
	}},
	// transactions: single commands in any order (EXEC without MULTI, …) and
	// a WATCH … MULTI … EXEC recipe.
	{name: "MULTI", weight: 2, args: func(g *fuzzGen) []string { return one("MULTI") }},
	{name: "EXEC", weight: 2, args: func(g *fuzzGen) []string { return one("EXEC") }},
	{name: "DISCARD", weight: 1, args: func(g *fuzzGen) []string { return one("DISCARD") }},
	{name: "WATCH", weight: 2, args: func(g *fuzzGen) []string { return cmdArgs("WATCH", g.keys(1, 2)) }},
	{name: "UNWATCH", weight: 1, args: func(g *fuzzGen) []string { return one("UNWATCH") }},
	{name: "transaction", weight: 4, steps: (*fuzzGen).transaction},
	{name: "lock", weight: 3, steps: (*fuzzGen).lockRecipe},
}

// scriptCall is EVAL/EVALSHA of script (a source or a SHA) with keys and
// arguments for argv (see fuzzScripts); at times a numkeys that is wrong (too
// many, negative, not a number).
func (g *fuzzGen) scriptCall(verb, script string, nkeys int, argv string) []string {
	args := []string{verb, script, strconv.Itoa(nkeys)}
	for i := 0; i < nkeys; i++ {
		args = append(args, g.key())
	}
	for _, kind := range argv {
		switch kind {
		case 't':
			args = append(args, g.expiry(true))
		case 's':
			args = append(args, g.expiry(false))
		case 'n':
			args = append(args, g.num())
		case 'f':
			args = append(args, g.field())
		default:
			args = append(args, g.val())
		}
	}
	if g.chance(12) {
		args[2] = g.pick([]string{"-1", "x", "9", strconv.Itoa(len(args) - 2)})
	}
	return args
}

// transaction: WATCH (sometimes), the other client changing a watched key
// (sometimes), MULTI, commands (sometimes a wrong-arity or unknown one, or a
// nested MULTI/WATCH), then EXEC (sometimes DISCARD or a wrong-arity EXEC).
func (g *fuzzGen) transaction() {
	watched := g.key()
	if g.chance(2) {
		g.add(cmd("WATCH", watched))
		if g.chance(2) {
			g.otherWrite(watched)
		}
	}
	g.add(cmd("MULTI"))
	for n := 1 + g.r.IntN(4); n > 0; n-- {
		switch g.r.IntN(12) {
		case 0:
			g.add(cmd(g.pick([]string{"MULTI", "WATCH", "DISCARD"}), g.pick([]string{"x", watched}))) // wrong arity or not allowed
		case 1:
			g.add(cmd("WATCH", watched)) // WATCH inside MULTI is not allowed
		case 2:
			g.add(cmd("SET", watched)) // wrong arity: EXECABORT
		default:
			g.next(false)
		}
	}
	if g.chance(4) {
		g.otherWrite(watched)
	}
	switch g.r.IntN(8) {
	case 0:
		g.add(cmd("DISCARD"))
	case 1:
		g.add(cmd("EXEC", "x"))
	default:
		g.add(cmd("EXEC"))
	}
}

// pipeline: 2 to 4 commands (no recipes, no placeholders) in one write, the
// replies compared in order; MULTI and EXEC among them are modelled as usual.
func (g *fuzzGen) pipeline() {
	var b strings.Builder
	n := 2 + g.r.IntN(3)
	for i := 0; i < n; {
		row := g.row()
		if row.args == nil || row.topOnly {
			continue
		}
		args := row.args(g)
		if strings.Contains(strings.Join(args, " "), "${") {
			continue
		}
		b.Write(multibulk(args...))
		g.model(args)
		i++
	}
	g.steps = append(g.steps, step{raw: b.String(), reads: n})
	g.idx++
}

// otherWrite is a write of key by the second connection.
func (g *fuzzGen) otherWrite(key string) {
	switch g.r.IntN(5) {
	case 0:
		g.add(cmd("SET", key, g.val()).on(1))
	case 1:
		g.add(cmd("DEL", key).on(1))
	case 2:
		g.add(cmd("EXPIRE", key, g.expiry(false)).on(1))
	case 3:
		g.add(cmd("HSET", key, g.field(), g.val()).on(1))
	default:
		g.add(cmd("GET", key).on(1)) // a read changes nothing
	}
}

// lockRecipe: SET NX PX with a token, a contender, a compare-and-pexpire
// extend and a compare-and-delete release with the right or a wrong token.
func (g *fuzzGen) lockRecipe() {
	k := g.key()
	tok, other := "tok-1", "tok-2"
	if g.chance(2) {
		tok, other = other, tok
	}
	g.add(cmd("SET", k, tok, "NX", "PX", g.expiry(true)))
	if g.chance(2) {
		g.add(cmd("SET", k, other, "NX", "PX", g.expiry(true)).on(1))
	}
	extend := fuzzScripts[1].src
	if g.chance(2) {
		g.add(cmd("EVAL", extend, "1", k, g.pick([]string{tok, tok, other}), g.expiry(true)))
	}
	g.add(cmd("GET", k))
	release := []string{"EVAL", cad, "1", k, g.pick([]string{tok, tok, other})}
	if g.chance(3) {
		release[0], release[1] = "EVALSHA", scriptSHA(cad)
	}
	g.add(cmd(release...))
}

// add appends a step and keeps the model of connection 0's MULTI state.
func (g *fuzzGen) add(s step) {
	g.steps = append(g.steps, s)
	g.idx++
	if s.conn == 0 {
		g.model(s.args)
	}
}

// model follows connection 0's MULTI state through one command it sends.
func (g *fuzzGen) model(args []string) {
	if len(args) == 0 {
		return
	}
	switch strings.ToUpper(args[0]) {
	case "MULTI":
		if len(args) == 1 {
			g.inMulti = true
		}
	case "EXEC":
		g.inMulti = false // a wrong-arity EXEC ends the transaction too
	case "DISCARD":
		if len(args) == 1 {
			g.inMulti = false
		}
	}
}

// next adds one single-command row's step (a recipe when recipes is true and
// one is drawn), on connection 0 or now and then on connection 1. A few
// commands lose arguments (wrong arity or a different valid form).
func (g *fuzzGen) next(recipes bool) {
	for {
		row := g.row()
		if row.topOnly && g.inMulti {
			continue
		}
		if row.steps != nil {
			if !recipes || g.inMulti {
				continue
			}
			row.steps(g)
			return
		}
		args := row.args(g)
		if g.chance(20) && len(args) > 1 {
			args = args[:1+g.r.IntN(len(args)-1)]
		}
		s := cmd(args...).with(row.norm)
		if row.other && !g.inMulti && g.chance(8) {
			s = s.on(1)
		}
		if g.chance(25) && !strings.Contains(strings.Join(args, " "), "${") {
			s.raw = cliLine(s) + "\r\n" // the inline form of the same command
		}
		g.add(s)
		return
	}
}

// row draws a row by weight.
func (g *fuzzGen) row() *fuzzRow {
	total := 0
	for _, r := range g.rows {
		total += r.weight
	}
	n := g.r.IntN(total)
	for i := range g.rows {
		if n < g.rows[i].weight {
			return &g.rows[i]
		}
		n -= g.rows[i].weight
	}
	panic("unreachable")
}

// genSequence is sequence seq of seed: length rows (a recipe is one row), a
// function of (seed, seq) alone.
func genSequence(seed uint64, seq, length int) []step {
	g := &fuzzGen{r: rand.New(rand.NewPCG(seed, uint64(seq))), rows: fuzzRows}
	for i := 0; i < length; i++ {
		g.next(true)
	}
	return g.steps
}

// TestDifferentialGenerator checks the generator without servers: a sequence
// is a function of its seed, every step is one command, and no step that
// reads a TTL or an unordered reply is generated inside MULTI.
func TestDifferentialGenerator(t *testing.T) {
	names := map[string]int{}
	for seq := 0; seq < 300; seq++ {
		a, b := genSequence(7, seq, 40), genSequence(7, seq, 40)
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Fatalf("sequence %d differs between two generations", seq)
		}
		in := false
		track := func(args []string, norm normalizer, conn int) {
			name := strings.ToUpper(args[0])
			names[name]++
			if in && norm.fn != nil {
				t.Fatalf("sequence %d: %s (normalised %s) inside MULTI", seq, name, norm.name)
			}
			if in && (name == "KEYS" || name == "SCRIPT" && len(args) > 1 && strings.EqualFold(args[1], "LOAD")) {
				t.Fatalf("sequence %d: %s inside MULTI", seq, name)
			}
			if conn == 0 {
				switch {
				case name == "MULTI" && len(args) == 1:
					in = true
				case name == "EXEC", name == "DISCARD" && len(args) == 1:
					in = false
				}
			}
		}
		for _, s := range a {
			switch {
			case s.scan:
				if in {
					t.Fatalf("sequence %d: SCAN inside MULTI", seq)
				}
			case len(s.args) > 0:
				if s.raw != "" && s.raw != cliLine(cmd(s.args...))+"\r\n" {
					t.Fatalf("sequence %d: inline %q is not %q", seq, s.raw, s.args)
				}
				track(s.args, s.norm, s.conn)
			default: // a pipeline: its commands as RESP arrays
				r := bufio.NewReader(strings.NewReader(s.raw))
				for n := 0; n < s.reads; n++ {
					v, err := decode(r, 0)
					if err != nil || v.kind != '*' || len(v.elems) == 0 {
						t.Fatalf("sequence %d: pipeline %q: command %d: %v", seq, s.raw, n, err)
					}
					var args []string
					for _, e := range v.elems {
						args = append(args, e.str)
					}
					track(args, normalizer{}, s.conn)
				}
				if _, err := r.Peek(1); err == nil {
					t.Fatalf("sequence %d: pipeline %q has more than %d commands", seq, s.raw, s.reads)
				}
			}
		}
	}
	var list []string
	for n := range names {
		list = append(list, n)
	}
	sort.Strings(list)
	for _, r := range fuzzRows {
		if r.args == nil {
			continue
		}
		if r.name == strings.ToUpper(r.name) && names[r.name] == 0 { // a lower-case name is not a command
			t.Errorf("row %s never generated in 300 sequences (generated: %v)", r.name, list)
		}
	}
}
