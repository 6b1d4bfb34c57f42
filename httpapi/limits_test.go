package httpapi

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
)

// waitingStore grants an acquire after wait, unless the request's context
// ends first (the client went away).
func waitingStore(wait time.Duration) eachStore {
	return func(ctx context.Context, r command.Request) resp.Value {
		if strings.EqualFold(string(r.Args[0]), "LOCK.ACQUIRE") {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return resp.Error("ERR the request's context ended: " + ctx.Err().Error())
			}
		}
		return resp.Int(7)
	}
}

// An acquire that waits longer than the server's ReadTimeout (and, by the
// same extension, its write timeout) is answered when its wait ends: the
// server's bounds do not cut a long poll short.
func TestLongAcquireOutlivesReadTimeout(t *testing.T) {
	srv := NewServer(Handler(waitingStore(600*time.Millisecond), nil), 0)
	srv.ReadTimeout = 200 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	hc := &http.Client{Timeout: 10 * time.Second}
	res, err := hc.Post("http://"+ln.Addr().String()+"/v1/locks/x:acquire", "application/json",
		strings.NewReader(`{"owner":"w1","ttl_ms":1000,"wait_ms":5000}`))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	json.NewDecoder(res.Body).Decode(&out)
	if res.StatusCode != 200 || out["acquired"] != true {
		t.Fatalf("an acquire waiting past ReadTimeout: %s %v", res.Status, out)
	}
}
