package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/outcome"
	"github.com/lockd/lockd/resp"
)

// Doer runs keyspace commands, as the RESP door does (raftstore's Store).
type Doer interface {
	Do(ctx context.Context, reqs []command.Request) []resp.Value
}

// v1 is the seed's HTTP API on top of the same commands as RESP:
//
//	POST   /v1/sessions                  {"client", "ttl_s"} -> {"session_id", "ttl_s", "keepalive_every_s"}
//	POST   /v1/sessions/{id}:keepalive   -> {"ttl_ms"}
//	DELETE /v1/sessions/{id}             -> {"released": n}
//	POST   /v1/locks/{name}:acquire      {"session_id", "owner", "mode", "limit", "reentrant", "wait_ms", "ttl_ms"} -> {"acquired", "token", "lease_ttl_ms"} | {"acquired": false, "holder", "queue_position"}
//	POST   /v1/locks/{name}:release      {"token"} -> {"released"}
//	GET    /v1/locks/{name}              -> {"name", "mode", "holders": [...], "waiters": [...]}
//
// Names are URL-encoded path segments. Errors are {"error", "code"} with a
// status: 400 bad input, 404 unknown session, 409 wrong type, 429 queue full or
// rate limited (with Retry-After), 503 retry (TRYAGAIN), 502 unknown outcome.
// An acquire with wait_ms blocks the request in the name's FIFO queue; a client
// that goes away leaves the queue.
type v1 struct{ store Doer }

func (h v1) register(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/sessions", h.openSession)
	mux.HandleFunc("POST /v1/sessions/{rest}", h.sessionAction)
	mux.HandleFunc("DELETE /v1/sessions/{id}", h.closeSession)
	mux.HandleFunc("POST /v1/locks/{rest}", h.lockAction)
	mux.HandleFunc("GET /v1/locks/{name}", h.lockInfo)
}

type apiError struct {
	status  int
	code    string
	msg     string
	retryMS int64 // 429: when to come back, from the reply (Retry-After)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func fail(w http.ResponseWriter, e apiError) {
	if e.status == http.StatusTooManyRequests {
		// Retry-After is in whole seconds.
		w.Header().Set("Retry-After", strconv.FormatInt(max(1, (e.retryMS+999)/1000), 10))
	}
	writeJSON(w, e.status, map[string]string{"error": e.msg, "code": e.code})
}

// replyError turns an error reply into an HTTP error: the status by the
// reply's outcome, the code and message are the reply's text (its first word
// and the whole).
func replyError(v resp.Value) apiError {
	text := v.String()
	code, _, _ := strings.Cut(text, " ")
	e := apiError{status: http.StatusBadRequest, code: code, msg: text}
	switch v.Outcome {
	case outcome.NoSession:
		e.status = http.StatusNotFound
	case outcome.NotApplied, outcome.ReadNotServed, outcome.ShuttingDown, outcome.Moving:
		e.status = http.StatusServiceUnavailable
	case outcome.Unknown:
		e.status = http.StatusBadGateway
	case outcome.WrongType:
		e.status = http.StatusConflict
	case outcome.Denied:
		e.status = http.StatusForbidden
	case outcome.QueueFull, outcome.RateLimited:
		e.status, e.retryMS = http.StatusTooManyRequests, v.Int
	}
	return e
}

// run parses and runs one command.
func (h v1) run(ctx context.Context, args ...string) (resp.Value, *apiError) {
	argv := make([][]byte, len(args))
	for i, a := range args {
		argv[i] = []byte(a)
	}
	op, spec, err := command.Parse(argv)
	if err != nil {
		e := replyError(resp.Error(err.Error()))
		return resp.Value{}, &e
	}
	v := h.store.Do(ctx, []command.Request{{Args: argv, Op: op, Spec: spec}})[0]
	if v.IsError() {
		e := replyError(v)
		return v, &e
	}
	return v, nil
}

func decode(r *http.Request, v any) *apiError {
	if r.ContentLength == 0 {
		return nil
	}
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &apiError{status: http.StatusBadRequest, code: "BADJSON", msg: "request body: " + err.Error()}
	}
	return nil
}

func (h v1) openSession(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Client string `json:"client"`
		TTLs   int64  `json:"ttl_s"`
	}
	if e := decode(r, &in); e != nil {
		fail(w, *e)
		return
	}
	args := []string{"SESSION.OPEN"}
	if in.TTLs > 0 {
		args = append(args, "TTL", strconv.FormatInt(in.TTLs*1000, 10))
	}
	if in.Client != "" {
		args = append(args, "NAME", in.Client)
	}
	v, e := h.run(r.Context(), args...)
	if e != nil {
		fail(w, *e)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"session_id": strconv.FormatInt(v.Elems[1].Int, 10), "ttl_s": v.Elems[3].Int / 1000, "keepalive_every_s": v.Elems[5].Int / 1000,
	})
}

func (h v1) sessionAction(w http.ResponseWriter, r *http.Request) {
	id, action, ok := strings.Cut(r.PathValue("rest"), ":")
	if !ok || action != "keepalive" {
		fail(w, apiError{status: http.StatusNotFound, code: "NOTFOUND", msg: "unknown session action"})
		return
	}
	v, e := h.run(r.Context(), "SESSION.KEEPALIVE", id)
	if e != nil {
		fail(w, *e)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ttl_ms": v.Int})
}

func (h v1) closeSession(w http.ResponseWriter, r *http.Request) {
	v, e := h.run(r.Context(), "SESSION.CLOSE", r.PathValue("id"))
	if e != nil {
		fail(w, *e)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"released": v.Int})
}

func (h v1) lockAction(w http.ResponseWriter, r *http.Request) {
	rest := r.PathValue("rest")
	i := strings.LastIndexByte(rest, ':')
	if i < 0 {
		fail(w, apiError{status: http.StatusNotFound, code: "NOTFOUND", msg: "use /v1/locks/{name}:acquire or :release"})
		return
	}
	name, action := rest[:i], rest[i+1:]
	switch action {
	case "acquire":
		h.acquire(w, r, name)
	case "release":
		h.release(w, r, name)
	default:
		fail(w, apiError{status: http.StatusNotFound, code: "NOTFOUND", msg: "unknown lock action " + strconv.Quote(action)})
	}
}

func (h v1) acquire(w http.ResponseWriter, r *http.Request, name string) {
	var in struct {
		SessionID string `json:"session_id"`
		Owner     string `json:"owner"`
		Mode      string `json:"mode"`
		Limit     int64  `json:"limit"`
		Reentrant bool   `json:"reentrant"`
		WaitMs    int64  `json:"wait_ms"`
		TTLMs     int64  `json:"ttl_ms"`
	}
	if e := decode(r, &in); e != nil {
		fail(w, *e)
		return
	}
	args := []string{"LOCK.ACQUIRE", name, in.Owner}
	switch {
	case in.SessionID != "":
		args = append(args, "SESSION", in.SessionID)
	case in.TTLMs > 0:
		args = append(args, "PX", strconv.FormatInt(in.TTLMs, 10))
	}
	switch in.Mode {
	case "", "exclusive":
	case "shared":
		args = append(args, "SHARED")
	case "semaphore":
		args = append(args, "LIMIT", strconv.FormatInt(in.Limit, 10))
	default:
		fail(w, apiError{status: http.StatusBadRequest, code: "ERR", msg: `mode must be "exclusive", "shared" or "semaphore" (with "limit")`})
		return
	}
	if in.Reentrant {
		args = append(args, "REENTRANT")
	}
	if in.WaitMs != 0 {
		args = append(args, "WAIT", strconv.FormatInt(in.WaitMs, 10))
	}
	if in.WaitMs > 0 { // the reply may take the wait (limits.go)
		ExtendWriteDeadline(w, time.Duration(min(in.WaitMs, maxWaitMs))*time.Millisecond)
	}
	v, e := h.run(r.Context(), args...)
	if e != nil {
		fail(w, *e)
		return
	}
	info, _ := h.run(r.Context(), "LOCK.INFO", name)
	if v.Kind == resp.KindInt {
		// The lease the server granted (a namespace may have chosen it): the
		// holder's ttl_ms, -1 for a session's lock.
		lease := in.TTLMs
		if lease == 0 {
			lease = command.DefaultLockTTL
		}
		for _, hv := range mapGet(info, "holders").Elems {
			if mapGet(hv, "token").Int == v.Int {
				lease = mapGet(hv, "ttl_ms").Int
				if lease >= 0 {
					lease += mapGet(hv, "held_for_ms").Int // as granted
				}
			}
		}
		writeJSON(w, http.StatusOK, map[string]any{"acquired": true, "token": v.Int, "lease_ttl_ms": lease})
		return
	}
	// Not granted: who holds it, and where a waiter would queue now.
	holder := ""
	if hs := mapGet(info, "holders"); len(hs.Elems) > 0 {
		holder = mapGet(hs.Elems[0], "owner").String()
	}
	writeJSON(w, http.StatusOK, map[string]any{"acquired": false, "holder": holder, "queue_position": mapGet(info, "queue_length").Int + 1})
}

func (h v1) release(w http.ResponseWriter, r *http.Request, name string) {
	var in struct {
		SessionID string `json:"session_id"`
		Token     int64  `json:"token"`
	}
	if e := decode(r, &in); e != nil {
		fail(w, *e)
		return
	}
	v, e := h.run(r.Context(), "LOCK.RELEASE", name, strconv.FormatInt(in.Token, 10))
	if e != nil {
		fail(w, *e)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"released": v.Int == 1})
}

func (h v1) lockInfo(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	v, e := h.run(r.Context(), "LOCK.INFO", name)
	if e != nil {
		fail(w, *e)
		return
	}
	out := map[string]any{"name": name, "mode": "none", "holders": []any{}, "waiters": []any{}, "lock_delay_ms": 0}
	if v.Kind == resp.KindMap {
		out["mode"] = mapGet(v, "mode").String()
		out["holders"] = objects(mapGet(v, "holders"))
		out["waiters"] = objects(mapGet(v, "waiters"))
		out["lock_delay_ms"] = mapGet(v, "lock_delay_ms").Int
	}
	writeJSON(w, http.StatusOK, out)
}

// objects turns an array of map replies into JSON objects.
func objects(arr resp.Value) []any {
	out := []any{}
	for _, hv := range arr.Elems {
		m := map[string]any{}
		for i := 0; i+1 < len(hv.Elems); i += 2 {
			if x := hv.Elems[i+1]; x.Kind == resp.KindInt {
				m[hv.Elems[i].String()] = x.Int
			} else {
				m[hv.Elems[i].String()] = x.String()
			}
		}
		out = append(out, m)
	}
	return out
}

// mapGet finds a key in a map reply.
func mapGet(v resp.Value, key string) resp.Value {
	for i := 0; i+1 < len(v.Elems); i += 2 {
		if v.Elems[i].String() == key {
			return v.Elems[i+1]
		}
	}
	return resp.Value{}
}
