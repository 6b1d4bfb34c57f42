package httpapi

import (
	"context"
	"net/http"
	"strings"

	"github.com/lockd/lockd/raftstore/command"
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
		user, pass, given := credentials(r)
		var u *command.User
		var ok bool
		switch {
		case given:
			u, ok = auth.Authenticate(user, pass)
		case !auth.AuthRequired():
			u, ok = auth.Authenticate(command.DefaultUserName, "")
		}
		if !ok {
			w.Header().Set("WWW-Authenticate", `Basic realm="lockd", charset="UTF-8"`)
			code, msg := "NOAUTH", string(command.ErrNoAuth)
			if given {
				code, msg = "WRONGPASS", string(command.ErrWrongPass)
			}
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": msg, "code": code})
			return
		}
		inner.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, u)))
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
// context before the store runs it.
type authorizing struct{ Store }

func (a authorizing) Do(ctx context.Context, reqs []command.Request) []resp.Value {
	u, _ := ctx.Value(userKey{}).(*command.User)
	if u == nil || u.Unrestricted() {
		return a.Store.Do(ctx, reqs)
	}
	out := make([]resp.Value, len(reqs))
	var allowed []command.Request
	var at []int
	for i, r := range reqs {
		if len(r.Args) == 0 {
			out[i] = resp.Error(string(command.ErrNoPermCommand(r.Spec.Name)))
			continue
		}
		if err := u.Authorize(command.FullName(r.Args), r.Args); err != nil {
			out[i] = resp.Error(err.Error())
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
