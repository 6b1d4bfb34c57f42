package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/lockd/lockd/command"
	"github.com/lockd/lockd/resp"
)

// Authenticator checks the credentials of HTTP requests against the same
// users as the RESP door (redisproto.Server satisfies it).
type Authenticator interface {
	// AuthRequired reports whether clients must authenticate (the default user
	// is off or has a password).
	AuthRequired() bool
	// Authenticate checks a user name and password as AUTH does.
	Authenticate(user, pass string) (*command.User, bool)
}

// AddrAuthenticator is an Authenticator that also counts failed credentials
// per client address and slows guessing down, as AUTH does
// (redisproto.Server.AuthenticateFrom): HandlerWithAuth uses it when its
// Authenticator has it. An error is a refusal: wrong credentials, or, if it
// has a RetryAfter method, an attempt the address may not make yet.
type AddrAuthenticator interface {
	AuthenticateFrom(ctx context.Context, addr, user, pass string) (*command.User, error)
}

// HandlerWithAuth is Handler with the RESP door's users: a request carries
// `Authorization: Bearer <password>` (the default user's password) or HTTP
// Basic credentials (user:password). Wrong credentials, or none while
// authentication is required, are answered 401 with WWW-Authenticate; GET
// /healthz and /readyz stay open for probes. Every command a request runs is
// checked against the user's ACL as on RESP: a refused one is answered 403
// with code NOPERM.
func HandlerWithAuth(store Store, metrics http.Handler, auth Authenticator) http.Handler {
	inner := Handler(authorizing{store}, metrics)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" {
			inner.ServeHTTP(w, r)
			return
		}
		u, ok := authenticate(w, r, auth)
		if !ok {
			return
		}
		inner.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, u)))
	})
}

// authenticate finds the user of r's credentials (the default user when r
// has none and none are required), or answers r itself: 401 NOAUTH without
// credentials, 401 WRONGPASS with wrong ones, 429 with Retry-After for an
// address slowed down after failing too often.
func authenticate(w http.ResponseWriter, r *http.Request, auth Authenticator) (*command.User, bool) {
	user, pass, given := credentials(r)
	var u *command.User
	var ok bool
	var err error
	switch {
	case given:
		if aa, has := auth.(AddrAuthenticator); has {
			u, err = aa.AuthenticateFrom(r.Context(), r.RemoteAddr, user, pass)
			ok = err == nil
		} else {
			u, ok = auth.Authenticate(user, pass)
		}
	case !auth.AuthRequired():
		u, ok = auth.Authenticate(command.DefaultUserName, "")
	}
	if ok {
		return u, true
	}
	var throttled interface{ RetryAfter() time.Duration }
	if errors.As(err, &throttled) {
		w.Header().Set("Retry-After", strconv.FormatInt(max(1, int64(throttled.RetryAfter()/time.Second)+1), 10))
		writeJSON(w, http.StatusTooManyRequests, map[string]string{"error": err.Error(), "code": "AUTHTHROTTLED"})
		return nil, false
	}
	w.Header().Set("WWW-Authenticate", `Basic realm="lockd", charset="UTF-8"`)
	code, msg := "NOAUTH", string(command.ErrNoAuth)
	if given {
		code, msg = "WRONGPASS", string(command.ErrWrongPass)
	}
	writeJSON(w, http.StatusUnauthorized, map[string]string{"error": msg, "code": code})
	return nil, false
}

// RequireAdmin returns h with every path under prefix needing, while
// authentication is required, the credentials of a user allowed every
// command and every key (the default user with -requirepass, say): without
// them it is answered as HandlerWithAuth answers (401, 429), and a user with
// restrictions gets 403 NOPERM. Other paths go to h as they are. server.New
// puts the fault endpoint (WithFaults, fault tests only) behind it.
func RequireAdmin(prefix string, h http.Handler, auth Authenticator) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, prefix) || !auth.AuthRequired() {
			h.ServeHTTP(w, r)
			return
		}
		u, ok := authenticate(w, r, auth)
		if !ok {
			return
		}
		if !u.Unrestricted() {
			writeJSON(w, http.StatusForbidden, map[string]string{
				"error": "NOPERM this user has no permissions to change faults: it needs every command and every key", "code": "NOPERM"})
			return
		}
		h.ServeHTTP(w, r)
	})
}

// credentials reads Bearer (user "default") or Basic credentials.
func credentials(r *http.Request) (user, pass string, ok bool) {
	if user, pass, ok = r.BasicAuth(); ok {
		return user, pass, true
	}
	h := r.Header.Get("Authorization")
	if scheme, token, found := strings.Cut(h, " "); found && strings.EqualFold(scheme, "Bearer") {
		return command.DefaultUserName, strings.TrimSpace(token), true
	}
	return "", "", false
}

type userKey struct{}

// authorizing checks each request against the user the middleware put in the
// context before the store runs it, and sends it as that user's
// (command.Request.User: the sessions it opens are the user's, and only that
// user may keep them alive, close them or attach locks to them).
type authorizing struct{ Store }

func (a authorizing) Do(ctx context.Context, reqs []command.Request) []resp.Value {
	u, _ := ctx.Value(userKey{}).(*command.User)
	if u != nil {
		for i := range reqs {
			reqs[i].User = u.Name
		}
	}
	if u == nil || u.Unrestricted() {
		return a.Store.Do(ctx, reqs)
	}
	out := make([]resp.Value, len(reqs))
	var allowed []command.Request
	var at []int
	for i, r := range reqs {
		if len(r.Args) == 0 {
			out[i] = command.ErrNoPermCommand(r.Spec.Name).Reply()
			continue
		}
		if err := u.Authorize(command.FullName(r.Args), r.Args); err != nil {
			out[i] = command.ErrorReply(err)
			continue
		}
		allowed = append(allowed, r)
		at = append(at, i)
	}
	if len(allowed) > 0 {
		for j, v := range a.Store.Do(ctx, allowed) {
			out[at[j]] = v
		}
	}
	return out
}
