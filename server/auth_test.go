package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// -requirepass end to end: go-redis without a password is refused NOAUTH,
// with it works; a team user is held to its key pattern on RESP and HTTP;
// the refusals show on /metrics.
func TestRequirePassEndToEnd(t *testing.T) {
	s := startWithPassword(t, "root-pw")
	ctx := context.Background()
	anon := redis.NewClient(&redis.Options{Addr: s.RESPAddr(), MaxRetries: -1, Protocol: 2})
	defer anon.Close()
	if err := anon.Set(ctx, "k", "v", 0).Err(); err == nil || err.Error() != "NOAUTH Authentication required." {
		t.Fatalf("SET without a password: %v", err)
	}
	admin := redis.NewClient(&redis.Options{Addr: s.RESPAddr(), Password: "root-pw", MaxRetries: -1})
	defer admin.Close()
	if err := admin.Do(ctx, "ACL", "SETUSER", "payouts", "on", ">team-pw", "~payouts/*", "+@all", "-@admin").Err(); err != nil {
		t.Fatal(err)
	}
	team := redis.NewClient(&redis.Options{Addr: s.RESPAddr(), Username: "payouts", Password: "team-pw", MaxRetries: -1})
	defer team.Close()
	if err := team.SetNX(ctx, "payouts/1", "w", 0).Err(); err != nil {
		t.Fatalf("own namespace: %v", err)
	}
	if err := team.SetNX(ctx, "search/1", "w", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Fatalf("other namespace: %v", err)
	}

	get := func(path, user, pass string) (int, string) {
		return httpCall(t, s, "GET", path, user, pass, "")
	}
	if code, _ := get("/v1/locks/payouts%2F1", "", ""); code != http.StatusUnauthorized {
		t.Errorf("HTTP without credentials: %d", code)
	}
	if code, body := get("/v1/locks/payouts%2Fnone", "payouts", "team-pw"); code == http.StatusUnauthorized || code == http.StatusForbidden {
		t.Errorf("HTTP, own namespace: %d %s", code, body)
	}
	if code, body := get("/v1/locks/search%2F1", "payouts", "team-pw"); code != http.StatusForbidden {
		t.Errorf("HTTP, other namespace: %d %s", code, body)
	}
	if code, _ := get("/readyz", "", ""); code != http.StatusOK {
		t.Errorf("/readyz without credentials: %d", code)
	}
	code, body := get("/metrics", "default", "root-pw")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	if !strings.Contains(body, "lockd_resp_noauth_total ") || strings.Contains(body, "lockd_resp_noauth_total 0") {
		t.Errorf("/metrics: no NOAUTH counted")
	}
	for _, want := range []string{"lockd_resp_noperm_total 1", "lockd_auth_failures_total 0",
		"lockd_resp_rejected_connections_total 0", "lockd_resp_output_buffer_disconnects_total 0", "lockd_resp_protocol_errors_total 0"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// Issue 44, item 1, end to end: a session belongs to the user who opened it.
// Two teams created with ACL SETUSER (payouts ~payouts/*, billing
// ~billing/*): billing opens a session and holds a lock with it; payouts'
// SESSION.CLOSE, SESSION.KEEPALIVE and LOCK.ACQUIRE … SESSION on billing's
// id are refused NOPERM over RESP, and the same over HTTP (403), while
// billing's lock stays held; an admin (~* +@all) may still close it.
func TestSessionOwnersEndToEnd(t *testing.T) {
	s := startWithPassword(t, "root-pw")
	ctx := context.Background()
	root := redis.NewClient(&redis.Options{Addr: s.RESPAddr(), Password: "root-pw", MaxRetries: -1, Protocol: 2})
	defer root.Close()
	for _, rules := range [][]any{
		{"payouts", "on", ">p-pw", "~payouts/*", "+@all", "-@admin", "-@dangerous"},
		{"billing", "on", ">b-pw", "~billing/*", "+@all", "-@admin", "-@dangerous"},
		{"ops", "on", ">o-pw", "~*", "+@all"},
	} {
		if err := root.Do(ctx, append([]any{"ACL", "SETUSER"}, rules...)...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	client := func(user, pass string) *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: s.RESPAddr(), Username: user, Password: pass, MaxRetries: -1, Protocol: 2})
		t.Cleanup(func() { c.Close() })
		return c
	}
	billing, payouts, ops := client("billing", "b-pw"), client("payouts", "p-pw"), client("ops", "o-pw")
	// billing's session holding name, and a check that it still holds it.
	session := func(name string) (id string, held func(when string)) {
		open, err := billing.Do(ctx, "SESSION.OPEN").Slice()
		if err != nil || len(open) < 2 {
			t.Fatalf("billing's SESSION.OPEN: %v %v", open, err)
		}
		id = fmt.Sprint(open[1])
		tok, err := billing.Do(ctx, "LOCK.ACQUIRE", name, "w1", "SESSION", id).Int64()
		if err != nil {
			t.Fatalf("billing's acquire: %v", err)
		}
		return id, func(when string) {
			t.Helper()
			if v, err := billing.Do(ctx, "LOCK.VALIDATE", name, tok).Int64(); err != nil || v != 1 {
				t.Errorf("%s: billing's lock on %s is no longer held (%v, %v)", when, name, v, err)
			}
		}
	}
	id, held := session("billing/ledger")
	for _, cmd := range [][]any{
		{"SESSION.CLOSE", id},
		{"SESSION.KEEPALIVE", id},
		{"LOCK.ACQUIRE", "payouts/x", "p1", "SESSION", id},
	} {
		err := payouts.Do(ctx, cmd...).Err()
		if err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
			t.Errorf("RESP: payouts' %v on billing's session: %v, want NOPERM", cmd, err)
		}
	}
	held("after payouts' RESP attempts")

	hid, hheld := session("billing/payroll")
	call := func(method, path, user, pass, body string) (int, string) {
		t.Helper()
		return httpCall(t, s, method, path, user, pass, body)
	}
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/v1/sessions/" + hid + ":keepalive", ""},
		{"POST", "/v1/locks/payouts%2Fy:acquire", `{"owner":"p1","session_id":"` + hid + `"}`},
		{"DELETE", "/v1/sessions/" + hid, ""},
	} {
		if code, body := call(c.method, c.path, "payouts", "p-pw", c.body); code != http.StatusForbidden || !strings.Contains(body, `"NOPERM"`) {
			t.Errorf("HTTP: payouts' %s %s: %d %s, want 403 NOPERM", c.method, c.path, code, body)
		}
	}
	hheld("after payouts' HTTP attempts")
	if code, body := call("POST", "/v1/sessions/"+hid+":keepalive", "billing", "b-pw", ""); code != http.StatusOK {
		t.Errorf("HTTP: billing's keepalive: %d %s", code, body)
	}
	// A session opened over HTTP is its user's too.
	code, body := call("POST", "/v1/sessions", "billing", "b-pw", `{"client":"w2"}`)
	if code != http.StatusOK {
		t.Fatalf("HTTP: billing's open: %d %s", code, body)
	}
	var opened struct {
		ID string `json:"session_id"`
	}
	if err := json.Unmarshal([]byte(body), &opened); err != nil || opened.ID == "" {
		t.Fatalf("HTTP open reply %s: %v", body, err)
	}
	if code, body := call("DELETE", "/v1/sessions/"+opened.ID, "payouts", "p-pw", ""); code != http.StatusForbidden {
		t.Errorf("HTTP: payouts' close of billing's HTTP session: %d %s", code, body)
	}
	if err := billing.Do(ctx, "SESSION.KEEPALIVE", opened.ID).Err(); err != nil {
		t.Errorf("RESP: billing's keepalive of its HTTP session: %v", err)
	}
	// The admin may close billing's session: its lock is released.
	if n, err := ops.Do(ctx, "SESSION.CLOSE", id).Int64(); err != nil || n != 1 {
		t.Fatalf("the admin's SESSION.CLOSE: %v %v, want 1 lock released", n, err)
	}
	if n, _ := billing.Exists(ctx, "billing/ledger").Result(); n != 0 {
		t.Error("billing's lock survived the admin's close")
	}
}

// startWithPassword starts a single node on free ports whose default user's
// password is pass; the test's cleanup closes it.
func startWithPassword(t *testing.T, pass string) *Server {
	t.Helper()
	s, err := New(Config{RESPAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0",
		DataDir: t.TempDir(), RequirePass: pass})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// httpCall sends method path with body to s's HTTP port, with Basic
// credentials unless user is "", and returns the status and the body.
func httpCall(t *testing.T, s *Server, method, path, user, pass, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, "http://"+s.HTTPAddr()+path, strings.NewReader(body))
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}
