//go:build faults

package server

import (
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/lockd/lockd/httpapi"
	"github.com/redis/go-redis/v9"
)

// faults is a FaultControl that records what was set.
type faults map[string]string

func (f faults) SetFault(name, value string) error { f[name] = value; return nil }
func (f faults) Faults() map[string]string         { return f }

// Item 7 of issue 44: with authentication on, the fault endpoint needs the
// credentials of an admin (a user allowed every command and key).
func TestFaultEndpointNeedsAdmin(t *testing.T) {
	fc := faults{}
	s, err := New(Config{RESPAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0",
		DataDir: t.TempDir(), RequirePass: "root-pw",
		HTTPHook: func(h http.Handler) http.Handler { return httpapi.WithFaults(h, fc) }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	admin := redis.NewClient(&redis.Options{Addr: s.RESPAddr(), Password: "root-pw", MaxRetries: -1})
	defer admin.Close()
	if err := admin.Do(context.Background(), "ACL", "SETUSER", "payouts", "on", ">team-pw", "~payouts/*", "+@all", "-@admin").Err(); err != nil {
		t.Fatal(err)
	}
	post := func(set func(*http.Request)) int {
		req, _ := http.NewRequest("POST", "http://"+s.HTTPAddr()+"/debug/faults?fsync_delay=1s", nil)
		if set != nil {
			set(req)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	if got := post(nil); got != http.StatusUnauthorized {
		t.Errorf("POST /debug/faults without credentials: %d, want 401", got)
	}
	if got := post(func(r *http.Request) { r.Header.Set("Authorization", "Bearer wrong") }); got != http.StatusUnauthorized {
		t.Errorf("with a wrong password: %d, want 401", got)
	}
	if got := post(func(r *http.Request) { r.SetBasicAuth("payouts", "team-pw") }); got != http.StatusForbidden {
		t.Errorf("as a team user: %d, want 403", got)
	}
	if len(fc) != 0 {
		t.Fatalf("refused requests set faults: %v", fc)
	}
	if got := post(func(r *http.Request) { r.Header.Set("Authorization", "Bearer root-pw") }); got != http.StatusOK || fc["fsync_delay"] != "1s" {
		t.Errorf("as the admin: %d, faults %v", got, fc)
	}
}
