package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
)

type fakeStore bool

// eachStore is a serving store that answers each request of a batch with
// its reply for it.
type eachStore func(ctx context.Context, r command.Request) resp.Value

func (eachStore) Serving() bool { return true }
func (f eachStore) Do(ctx context.Context, reqs []command.Request) []resp.Value {
	out := make([]resp.Value, len(reqs))
	for i, r := range reqs {
		out[i] = f(ctx, r)
	}
	return out
}

func (f fakeStore) Serving() bool { return bool(f) }
func (f fakeStore) Do(context.Context, []command.Request) []resp.Value {
	return []resp.Value{resp.Error("TRYAGAIN not serving")}
}

func TestHealthAndReadiness(t *testing.T) {
	cases := []struct {
		leader bool
		path   string
		want   int
	}{
		{false, "/healthz", http.StatusOK},
		{false, "/readyz", http.StatusServiceUnavailable},
		{true, "/readyz", http.StatusOK},
		{true, "/nope", http.StatusNotFound},
	}
	for _, c := range cases {
		rec := httptest.NewRecorder()
		Handler(fakeStore(c.leader), nil).ServeHTTP(rec, httptest.NewRequest("GET", c.path, nil))
		if rec.Code != c.want {
			t.Errorf("leader=%v GET %s = %d, want %d", c.leader, c.path, rec.Code, c.want)
		}
	}
}
