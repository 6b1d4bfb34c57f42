package server

import (
	"context"
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
	s, err := New(Config{RESPAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0",
		DataDir: t.TempDir(), RequirePass: "root-pw"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
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
		req, _ := http.NewRequest("GET", "http://"+s.HTTPAddr()+path, nil)
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
