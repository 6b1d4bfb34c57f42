package server

import (
	"net/http"
	"net/http/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/lockd/lockd/httpapi"
)

// reservedFDs are the descriptors kept for everything but client
// connections: the Raft log and snapshots, peer connections, the listeners.
const reservedFDs = 256

// descriptorBudget shares the process's descriptor limit between the ports,
// so that no flood of connections on one takes the descriptors the others,
// the log and the peers need: the HTTP door holds at most half the limit,
// and the RESP door's -maxclients is lowered, as Redis lowers maxclients, to
// what is left after the HTTP door and reservedFDs. Each lowering is logged.
// Beyond these bounds an accept that fails is retried, not fatal
// (redisproto.Server.Serve; net/http's server).
func (s *Server) descriptorBudget() (httpConns, maxClients int) {
	httpConns, maxClients = s.cfg.HTTPMaxConns, s.cfg.MaxClients
	if httpConns <= 0 {
		httpConns = httpapi.DefaultMaxConns
	}
	if maxClients <= 0 {
		maxClients = 10000 // redisproto's default, as Redis's
	}
	limit := int(min(openFileLimit(), 1<<30))
	if limit == 0 {
		return httpConns, maxClients
	}
	if s.cfg.HTTPAddr != "" && httpConns > limit/2 {
		s.log.Warn("the HTTP port's connection cap is lowered to half the open-file limit", "http_max_conns", httpConns, "now", limit/2, "open_file_limit", limit)
		httpConns = limit / 2
	}
	left := limit - reservedFDs
	if s.cfg.HTTPAddr != "" {
		left -= httpConns
	}
	if left = max(left, 16); maxClients > left {
		s.log.Warn("maxclients is lowered to fit the open-file limit (raise it with ulimit -n / LimitNOFILE)",
			"maxclients", maxClients, "now", left, "open_file_limit", limit)
		maxClients = left
	}
	return httpConns, maxClients
}

// withPprof routes /debug/pprof/ to net/http/pprof and everything else to
// h. The command line (/debug/pprof/cmdline) is args with every secret
// replaced (redactArgs), and a profile or trace may take its seconds
// parameter past the HTTP door's write timeout.
func withPprof(h http.Handler, args []string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte(strings.Join(redactArgs(args), "\x00")))
	})
	long := func(f http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if sec, err := strconv.ParseInt(r.FormValue("seconds"), 10, 64); err == nil && sec > 0 {
				httpapi.ExtendWriteDeadline(w, time.Duration(min(sec, 24*3600))*time.Second)
			}
			f(w, r)
		}
	}
	mux.HandleFunc("/debug/pprof/profile", long(pprof.Profile))
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", long(pprof.Trace))
	mux.Handle("/", h)
	return mux
}

// redacted replaces a secret in what /debug/pprof/cmdline shows.
const redacted = "REDACTED"

// secretFlag reports whether a flag's name says it holds a secret: any flag
// whose name contains "pass" or "secret" (-requirepass, -cluster-secret).
func secretFlag(name string) bool {
	name = strings.ToLower(name)
	return strings.Contains(name, "pass") || strings.Contains(name, "secret")
}

// redactArgs is a copy of a command line (args[0] is the program) with the
// value of every secret flag replaced by "REDACTED", whether it is given as
// -flag=value or as -flag value (one or two dashes). Nothing after "--" is
// a flag. lockd's secret flags all take a value, so the argument after a
// bare secret flag is always its value.
func redactArgs(args []string) []string {
	out := append([]string(nil), args...)
	for i := 1; i < len(out); i++ {
		a := out[i]
		if a == "--" {
			break
		}
		if len(a) < 2 || a[0] != '-' {
			continue
		}
		name := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		name, _, hasValue := strings.Cut(name, "=")
		if !secretFlag(name) {
			continue
		}
		if hasValue {
			out[i] = a[:strings.IndexByte(a, '=')+1] + redacted
		} else if i+1 < len(out) {
			out[i+1] = redacted
			i++
		}
	}
	return out
}
