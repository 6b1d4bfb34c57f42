package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
)

// users is an Authenticator over fixed users.
type users struct {
	required bool
	byName   map[string]command.User
}

func (u users) AuthRequired() bool { return u.required }
func (u users) Authenticate(name, pass string) (*command.User, bool) {
	x, ok := u.byName[name]
	if !ok || !x.CheckPassword([]byte(pass)) {
		return nil, false
	}
	return &x, true
}

// grantingStore grants every acquire with token 7 and records what it ran.
type grantingStore struct{ ran *[]string }

func (grantingStore) Serving() bool { return true }
func (g grantingStore) Do(_ context.Context, reqs []command.Request) []resp.Value {
	out := make([]resp.Value, len(reqs))
	for i, r := range reqs {
		*g.ran = append(*g.ran, string(r.Args[1]))
		out[i] = resp.Int(7)
	}
	return out
}

func TestHTTPAuth(t *testing.T) {
	team, err := command.SetUser(command.NewUser("payouts"), [][]byte{[]byte("on"), []byte(">team-pw"), []byte("~payouts/*"), []byte("+@all")}, true)
	if err != nil {
		t.Fatal(err)
	}
	auth := users{required: true, byName: map[string]command.User{
		"default": command.DefaultUser("root-pw"),
		"payouts": team,
	}}
	var ran []string
	h := HandlerWithAuth(grantingStore{&ran}, http.NotFoundHandler(), auth)
	acquire := func(name string, set func(*http.Request)) int {
		req := httptest.NewRequest("POST", "/v1/locks/"+name+":acquire", strings.NewReader(`{"owner":"w1","ttl_ms":1000}`))
		if set != nil {
			set(req)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	for _, tc := range []struct {
		what string
		name string
		set  func(*http.Request)
		want int
	}{
		{"no credentials", "payouts%2Fa", nil, http.StatusUnauthorized},
		{"wrong bearer", "payouts%2Fa", func(r *http.Request) { r.Header.Set("Authorization", "Bearer nope") }, http.StatusUnauthorized},
		{"default bearer", "search%2Fa", func(r *http.Request) { r.Header.Set("Authorization", "Bearer root-pw") }, http.StatusOK},
		{"team basic, own namespace", "payouts%2Fa", func(r *http.Request) { r.SetBasicAuth("payouts", "team-pw") }, http.StatusOK},
		{"team basic, other namespace", "search%2Fb", func(r *http.Request) { r.SetBasicAuth("payouts", "team-pw") }, http.StatusForbidden},
		{"team wrong password", "payouts%2Fa", func(r *http.Request) { r.SetBasicAuth("payouts", "x") }, http.StatusUnauthorized},
	} {
		if got := acquire(tc.name, tc.set); got != tc.want {
			t.Errorf("%s: status %d, want %d", tc.what, got, tc.want)
		}
	}
	if strings.Contains(strings.Join(ran, ","), "search/b") {
		t.Errorf("the store ran %q; refused requests must not reach it", ran)
	}
	// Probes stay open.
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	if rec.Code != http.StatusOK {
		t.Errorf("/healthz without credentials: %d", rec.Code)
	}
	// Without a password on the default user, no credentials are needed.
	open := HandlerWithAuth(grantingStore{&ran}, nil, users{byName: map[string]command.User{"default": command.DefaultUser("")}})
	rec = httptest.NewRecorder()
	open.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/locks/x:acquire", strings.NewReader(`{"owner":"w1","ttl_ms":1000}`)))
	if rec.Code != http.StatusOK {
		t.Errorf("open server: %d %s", rec.Code, rec.Body)
	}
}

// userStore records the user of every request it runs.
type userStore struct{ users *[]string }

func (userStore) Serving() bool { return true }
func (u userStore) Do(_ context.Context, reqs []command.Request) []resp.Value {
	out := make([]resp.Value, len(reqs))
	for i, r := range reqs {
		*u.users = append(*u.users, r.User)
		out[i] = resp.Int(1)
	}
	return out
}

// Every request runs as the user who sent it (command.Request.User), so that
// the store knows whose session a keepalive or close is for (issue 44).
func TestHTTPRequestsCarryTheirUser(t *testing.T) {
	team, err := command.SetUser(command.NewUser("payouts"), [][]byte{[]byte("on"), []byte(">team-pw"), []byte("~payouts/*"), []byte("+@all")}, true)
	if err != nil {
		t.Fatal(err)
	}
	auth := users{required: true, byName: map[string]command.User{"default": command.DefaultUser("root-pw"), "payouts": team}}
	var got []string
	h := HandlerWithAuth(userStore{&got}, http.NotFoundHandler(), auth)
	for _, set := range []func(*http.Request){
		func(r *http.Request) { r.SetBasicAuth("payouts", "team-pw") },
		func(r *http.Request) { r.Header.Set("Authorization", "Bearer root-pw") },
	} {
		req := httptest.NewRequest("POST", "/v1/sessions/42:keepalive", nil)
		set(req)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("keepalive: %d %s", rec.Code, rec.Body)
		}
	}
	if strings.Join(got, ",") != "payouts,default" {
		t.Fatalf("the store ran requests as %q, want payouts then default", got)
	}
}
