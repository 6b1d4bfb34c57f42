package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func start(t *testing.T, dir string) *Server {
	t.Helper()
	s, err := New(Config{RESPAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", DataDir: dir})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	return s
}

func client(t *testing.T, s *Server, proto int) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.RESPAddr(), Protocol: proto, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	return c
}

func TestFencedGrantSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	s := start(t, dir)
	c := client(t, s, 2)
	tok, err := c.Do(ctx, "SET", "lock:a", "owner1", "NX", "PX", "60000", "FENCE").Int64()
	if err != nil || tok <= 0 {
		t.Fatalf("SET NX PX FENCE = %d, %v", tok, err)
	}
	if v, err := c.Do(ctx, "SET", "lock:a", "owner2", "NX", "PX", "60000", "FENCE").Result(); !errors.Is(err, redis.Nil) {
		t.Fatalf("second SET NX FENCE = %v, %v; want nil", v, err)
	}
	if got, _ := c.Do(ctx, "FENCE", "lock:a").Int64(); got != tok {
		t.Fatalf("FENCE = %d, want %d", got, tok)
	}
	pttl1, _ := c.PTTL(ctx, "lock:a").Result()
	read1 := time.Now()
	c.Close()
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}

	s = start(t, dir)
	defer s.Close()
	c = client(t, s, 3)
	if v, _ := c.Get(ctx, "lock:a").Result(); v != "owner1" {
		t.Fatalf("after restart GET = %q", v)
	}
	if got, _ := c.Do(ctx, "FENCE", "lock:a").Int64(); got != tok {
		t.Fatalf("after restart FENCE = %d, want %d", got, tok)
	}
	pttl2, _ := c.PTTL(ctx, "lock:a").Result()
	// Log time pauses while no leader runs, so a restart never shortens a lease
	// by more than the time that passed, and never makes it longer than granted.
	if pttl2 <= 0 || pttl2 > 60*time.Second || pttl2 < pttl1-time.Since(read1) {
		t.Fatalf("PTTL %v before restart, %v after (%v later)", pttl1, pttl2, time.Since(read1))
	}
	tok2, err := c.Do(ctx, "SET", "lock:b", "x", "FENCE").Int64()
	if err != nil || tok2 <= tok {
		t.Fatalf("token after restart = %d (%v), want > %d", tok2, err, tok)
	}
}

func TestPipelineAndConcurrency(t *testing.T) {
	s := start(t, t.TempDir())
	defer s.Close()
	ctx := context.Background()
	c := client(t, s, 2)
	pipe := c.Pipeline()
	var tokens []*redis.Cmd
	for i := 0; i < 200; i++ {
		tokens = append(tokens, pipe.Do(ctx, "SET", "k", i, "FENCE"))
	}
	get := pipe.Get(ctx, "k")
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	var last int64
	for i, cmd := range tokens {
		tok, err := cmd.Int64()
		if err != nil || tok <= last {
			t.Fatalf("pipelined SET %d: token %d (%v) after %d", i, tok, err, last)
		}
		last = tok
	}
	if get.Val() != "199" {
		t.Fatalf("GET after the pipeline = %q, want 199 (a read sees the writes before it)", get.Val())
	}

	// Concurrent INCRs from many clients are all counted exactly once.
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				if err := c.Incr(ctx, "n").Err(); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n, _ := c.Get(ctx, "n").Int(); n != 400 {
		t.Fatalf("n = %d, want 400", n)
	}
}

func TestActiveExpiry(t *testing.T) {
	s := start(t, t.TempDir())
	defer s.Close()
	ctx := context.Background()
	c := client(t, s, 2)
	c.Set(ctx, "short", "v", 50*time.Millisecond)
	c.Set(ctx, "long", "v", time.Hour)
	// The leader's tick removes the key without any command touching it; the
	// raft index grows by the tick entry.
	deadline := time.Now().Add(5 * time.Second)
	for {
		info, _ := c.Info(ctx, "raft").Result()
		if n, _ := c.DBSize(ctx).Result(); n == 1 && strings.Contains(info, "raft_state:leader") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("expired key still counted after 5s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestStartErrors(t *testing.T) {
	// A RESP port in use is reported clearly, before any data is touched.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = New(Config{RESPAddr: ln.Addr().String(), PeerAddr: "127.0.0.1:0", DataDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "RESP port "+ln.Addr().String()) {
		t.Fatalf("busy RESP port: %v", err)
	}
	// A data directory that is a file.
	f := filepath.Join(t.TempDir(), "file")
	os.WriteFile(f, []byte("x"), 0o644)
	_, err = New(Config{RESPAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0", DataDir: f})
	if err == nil || !strings.Contains(err.Error(), f) {
		t.Fatalf("file as data dir: %v", err)
	}
	// A data directory in use by another lockd.
	dir := t.TempDir()
	s := start(t, dir)
	defer s.Close()
	_, err = New(Config{RESPAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0", DataDir: dir})
	if err == nil || !strings.Contains(err.Error(), dir) {
		t.Fatalf("data dir in use: %v", err)
	}
}

func TestHealthAndReadiness(t *testing.T) {
	s := start(t, t.TempDir())
	defer s.Close()
	for _, p := range []string{"/healthz", "/readyz"} {
		conn, err := net.Dial("tcp", s.HTTPAddr())
		if err != nil {
			t.Fatal(err)
		}
		conn.Write([]byte("GET " + p + " HTTP/1.0\r\n\r\n"))
		buf := make([]byte, 256)
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, _ := conn.Read(buf)
		conn.Close()
		if !strings.HasPrefix(string(buf[:n]), "HTTP/1.0 200") {
			t.Fatalf("%s: %q", p, buf[:n])
		}
	}
}

// The seed's HTTP API against a running node: a session, an acquire, a refused
// acquire by another owner, the lock's details, a release, keepalive and close,
// and JSON errors with their statuses.
func TestHTTPAPI(t *testing.T) {
	s := start(t, t.TempDir())
	defer s.Close()
	base := "http://" + s.HTTPAddr()
	call := func(method, path, body string, wantStatus int) map[string]any {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var out map[string]any
		json.NewDecoder(res.Body).Decode(&out)
		if res.StatusCode != wantStatus {
			t.Fatalf("%s %s: status %d (%v), want %d", method, path, res.StatusCode, out, wantStatus)
		}
		return out
	}
	sess := call("POST", "/v1/sessions", `{"client": "payout-worker-17", "ttl_s": 15}`, 200)
	id, _ := sess["session_id"].(string)
	if id == "" || sess["ttl_s"] != float64(15) || sess["keepalive_every_s"] != float64(5) {
		t.Fatalf("session: %v", sess)
	}
	name := url.PathEscape("payouts/merchant-48213")
	got := call("POST", "/v1/locks/"+name+":acquire", `{"session_id": "`+id+`", "owner": "payout-worker-17/batch-2210", "wait_ms": 0}`, 200)
	if got["acquired"] != true || got["token"].(float64) <= 0 {
		t.Fatalf("acquire: %v", got)
	}
	tok := int64(got["token"].(float64))
	other := call("POST", "/v1/locks/"+name+":acquire", `{"owner": "payout-worker-02", "ttl_ms": 1000}`, 200)
	if other["acquired"] != false || other["holder"] != "payout-worker-17/batch-2210" {
		t.Fatalf("second acquire: %v", other)
	}
	info := call("GET", "/v1/locks/"+name, "", 200)
	if info["mode"] != "exclusive" || len(info["holders"].([]any)) != 1 {
		t.Fatalf("info: %v", info)
	}
	if ka := call("POST", "/v1/sessions/"+id+":keepalive", "", 200); ka["ttl_ms"] != float64(15000) {
		t.Fatalf("keepalive: %v", ka)
	}
	if rel := call("POST", "/v1/locks/"+name+":release", fmt.Sprintf(`{"session_id": %q, "token": %d}`, id, tok), 200); rel["released"] != true {
		t.Fatalf("release: %v", rel)
	}
	call("POST", "/v1/locks/"+name+":acquire", `{"session_id": "`+id+`", "owner": "w"}`, 200)
	if cl := call("DELETE", "/v1/sessions/"+id, "", 200); cl["released"] != float64(1) {
		t.Fatalf("close: %v", cl)
	}
	if e := call("POST", "/v1/sessions/"+id+":keepalive", "", 404); e["code"] != "NOSESSION" {
		t.Fatalf("keepalive after close: %v", e)
	}
	call("POST", "/v1/locks/x:acquire", `{"owner": "o", "mode": "weird"}`, 400)
	call("POST", "/v1/locks/x:acquire", `{"owner": "o", "bogus": 1}`, 400)
	// wait_ms blocks in the FIFO queue until the lease ends.
	first := call("POST", "/v1/locks/x:acquire", `{"owner": "o", "ttl_ms": 300}`, 200)
	if first["acquired"] != true || first["lease_ttl_ms"] != float64(300) {
		t.Fatalf("acquire x: %v", first)
	}
	waited := call("POST", "/v1/locks/x:acquire", `{"owner": "p", "wait_ms": 10000}`, 200)
	if waited["acquired"] != true || waited["token"].(float64) <= first["token"].(float64) {
		t.Fatalf("blocking acquire: %v", waited)
	}
	// A full queue answers 429 with Retry-After.
	c := client(t, s, 2)
	if err := c.Do(context.Background(), "NAMESPACE.SET", "tight/", "MAXWAITERS", "0").Err(); err != nil {
		t.Fatal(err)
	}
	call("POST", "/v1/locks/tight%2Fa:acquire", `{"owner": "o"}`, 200)
	if e := call("POST", "/v1/locks/tight%2Fa:acquire", `{"owner": "p", "wait_ms": 1000}`, 429); e["code"] != "QUEUEFULL" {
		t.Fatalf("full queue: %v", e)
	}
	if info := call("GET", "/v1/locks/tight%2Fa", "", 200); info["holders"].([]any)[0].(map[string]any)["owner"] != "o" {
		t.Fatalf("info of an URL-encoded name: %v", info)
	}
}

// /metrics serves the Raft state and the front door's totals in Prometheus form.
func TestMetrics(t *testing.T) {
	s := start(t, t.TempDir())
	defer s.Close()
	c := client(t, s, 2)
	ctx := context.Background()
	c.Set(ctx, "k", "v", 0)
	// A holder that releases after its lease ended shows in the metric that
	// matters most, by namespace.
	c.Do(ctx, "NAMESPACE.SET", "pay/", "MAXWAITERS", "10")
	tok, _ := c.Do(ctx, "LOCK.ACQUIRE", "pay/a", "w", "PX", "20").Int64()
	pollUntil(t, "the lease to end", func() bool { return c.Exists(ctx, "pay/a").Val() == 0 })
	c.Do(ctx, "LOCK.RELEASE", "pay/a", tok)
	if info := c.Info(ctx, "locks").Val(); !strings.Contains(info, "lease_expired_while_held:1") || !strings.Contains(info, "lock_grants:1") {
		t.Errorf("INFO locks = %q", info)
	}
	scrape := func() string {
		res, err := http.Get("http://" + s.HTTPAddr() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return string(body)
	}
	// The expired hold counts as held until its record is next touched: by
	// the leader's expiry tick (raftstore's expiryLoop), in the background.
	var body string
	pollUntil(t, "the expired hold to leave lockd_locks_held", func() bool {
		body = scrape()
		return strings.Contains(body, "\nlockd_locks_held 0\n")
	})
	for _, want := range []string{"lockd_raft_leader 1", `lockd_resp_commands_total{command="lock.release",result="ok"} 1`, `lockd_command_duration_seconds_count{command="set"} 1`, "lockd_raft_applied_index ", "lockd_raft_log_write_batches_total ", "go_goroutines ",
		`lockd_lock_expired_while_held_total{namespace="pay/"} 1`, "lockd_lock_grants_total 1", "lockd_locks_held 0", "lockd_sessions 0", "lockd_lock_waiters 0",
		"lockd_raft_commit_seconds_count ", "lockd_fsync_seconds_count ", "lockd_raft_leader_changes_total 1", "lockd_lock_queue_full_total 0"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// A write over MaxWriteBytes, alone, in a transaction or as a script, is
// answered with an error and applies nothing; the connection goes on.
func TestMaxWriteBytes(t *testing.T) {
	s, err := New(Config{RESPAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", DataDir: t.TempDir(), MaxWriteBytes: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	c := client(t, s, 2)
	tooLarge := func(what string, err error) {
		t.Helper()
		if err == nil || !strings.HasPrefix(err.Error(), "ERR write too large for the log: ") {
			t.Fatalf("%s: %v, want ERR write too large for the log: …", what, err)
		}
	}
	tooLarge("SET", c.Set(ctx, "k", strings.Repeat("v", 2000), 0).Err())
	_, err = c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "a", strings.Repeat("a", 600), 0)
		p.Set(ctx, "b", strings.Repeat("b", 600), 0)
		return nil
	})
	tooLarge("MULTI/EXEC", err)
	tooLarge("EVAL", c.Eval(ctx, "return redis.call('SET', KEYS[1], ARGV[1])", []string{"k"}, strings.Repeat("v", 2000)).Err())
	if n := c.Exists(ctx, "k", "a", "b").Val(); n != 0 {
		t.Fatalf("%d of the refused keys exist", n)
	}
	if err := c.Set(ctx, "k", strings.Repeat("v", 900), 0).Err(); err != nil {
		t.Fatalf("SET within the limit: %v", err)
	}
	if n := scrape(t, s)["lockd_writes_too_large_total"]; n != 3 {
		t.Fatalf("lockd_writes_too_large_total = %v, want 3", n)
	}
	if info := c.Info(ctx, "locks").Val(); !strings.Contains(info, "writes_too_large:3\r\n") {
		t.Fatalf("INFO locks lacks writes_too_large:3: %q", info)
	}
	if v := c.Get(ctx, "k").Val(); len(v) != 900 {
		t.Fatalf("GET k: %d bytes", len(v))
	}
}
