package httpapi

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

type fakeStore bool

func (f fakeStore) Serving() bool { return bool(f) }

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
		Handler(fakeStore(c.leader)).ServeHTTP(rec, httptest.NewRequest("GET", c.path, nil))
		if rec.Code != c.want {
			t.Errorf("leader=%v GET %s = %d, want %d", c.leader, c.path, rec.Code, c.want)
		}
	}
}
