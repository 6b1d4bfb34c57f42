package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/outcome"
	"github.com/lockd/lockd/resp"
)

// replyStore answers every request with v.
func replyStore(v resp.Value) eachStore {
	return func(context.Context, command.Request) resp.Value { return v }
}

func withInt(v resp.Value, n int64) resp.Value { v.Int = n; return v }

// The HTTP status of a failed lock call follows the reply's outcome, and the
// 429s' Retry-After its wait (whole seconds, rounded up); the body keeps the
// reply's text and first word.
func TestHTTPStatusByOutcome(t *testing.T) {
	for _, c := range []struct {
		v          resp.Value
		status     int
		retryAfter string
	}{
		{resp.Failed(outcome.NoSession, "NOSESSION no such session"), http.StatusNotFound, ""},
		{resp.Failed(outcome.NotApplied, "TRYAGAIN write not applied"), http.StatusServiceUnavailable, ""},
		{resp.Failed(outcome.Moving, "TRYAGAIN slot 7 is moving to another group"), http.StatusServiceUnavailable, ""},
		{resp.Failed(outcome.Unknown, "UNKNOWNOUTCOME maybe"), http.StatusBadGateway, ""},
		{resp.Failed(outcome.WrongType, "WRONGTYPE no"), http.StatusConflict, ""},
		{resp.Failed(outcome.Denied, "NOPERM no"), http.StatusForbidden, ""},
		{withInt(resp.Failed(outcome.RateLimited, "RATELIMITED namespace 'a:' allows 5 operations per second; retry in 250 ms"), 250), http.StatusTooManyRequests, "1"},
		{withInt(resp.Failed(outcome.QueueFull, "QUEUEFULL the wait queue of 'l' is full (2 waiters); retry in 2500 ms"), 2500), http.StatusTooManyRequests, "3"},
		{resp.Error("ERR something else"), http.StatusBadRequest, ""},
		// A text alone decides nothing: the same words with no outcome are a 400.
		{resp.Error("TRYAGAIN looks like a refusal"), http.StatusBadRequest, ""},
	} {
		rec := httptest.NewRecorder()
		body := strings.NewReader(`{"owner":"me","ttl_ms":1000}`)
		Handler(replyStore(c.v), nil).ServeHTTP(rec, httptest.NewRequest("POST", "/v1/locks/l:acquire", body))
		if rec.Code != c.status {
			t.Errorf("%q (%v): status %d, want %d", c.v.String(), c.v.Outcome, rec.Code, c.status)
		}
		if got := rec.Header().Get("Retry-After"); got != c.retryAfter {
			t.Errorf("%q: Retry-After %q, want %q", c.v.String(), got, c.retryAfter)
		}
		var out map[string]string
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out["error"] != c.v.String() || out["code"] != strings.Fields(c.v.String())[0] {
			t.Errorf("%q: body %s (%v)", c.v.String(), rec.Body.String(), err)
		}
	}
}
