package httpapi

import (
	"net"
	"net/http"
	"time"

	"golang.org/x/net/netutil"
)

// Bounds of the HTTP door's server, against clients that connect and send
// nothing, send slowly, or never read (SECURITY.md). Every HTTP request of
// the API is small and answered at once, except an acquire with wait_ms,
// whose reply may take that long: its write deadline is extended by its wait
// (ExtendWriteDeadline), as are the runtime profiles' (-pprof).
const (
	// ReadHeaderTimeout bounds reading a request's headers.
	ReadHeaderTimeout = 10 * time.Second
	// ReadTimeout bounds reading a whole request, its body included.
	ReadTimeout = 30 * time.Second
	// WriteTimeout bounds writing a reply, from the start of the handler.
	WriteTimeout = 30 * time.Second
	// DefaultIdleTimeout closes a keep-alive connection that sends no next
	// request for this long.
	DefaultIdleTimeout = 2 * time.Minute
	// MaxHeaderBytes bounds a request's headers (net/http's default is 1 MiB).
	MaxHeaderBytes = 64 << 10
	// DefaultMaxConns is how many connections the HTTP port holds at once;
	// more wait in the kernel's accept queue until one closes.
	DefaultMaxConns = 1024
)

// maxWaitMs caps the wait an acquire's write deadline is extended by (a
// year: no overflow of a time.Duration).
const maxWaitMs = 365 * 24 * 3600 * 1000

// NewServer returns the HTTP door's server for h with the bounds above
// (idle: the keep-alive timeout, 0: DefaultIdleTimeout). Its WriteTimeout is
// left 0 and set per request instead (a deadline WriteTimeout from the
// handler's start, which a handler may extend), so that a long-polling
// acquire is not cut at WriteTimeout and net/http/pprof does not refuse
// profiles longer than it.
func NewServer(h http.Handler, idle time.Duration) *http.Server {
	if idle <= 0 {
		idle = DefaultIdleTimeout
	}
	return &http.Server{
		Handler:           writeDeadline(h),
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		IdleTimeout:       idle,
		MaxHeaderBytes:    MaxHeaderBytes,
	}
}

// LimitListener bounds the connections accepted from ln and held open at
// once to n (0: DefaultMaxConns): Accept waits while n are open, so that
// idle clients cannot take every descriptor the process has.
// golang.org/x/net/netutil does this (the Go team's own, as net/http
// recommends), so it is used rather than a semaphore of our own.
func LimitListener(ln net.Listener, n int) net.Listener {
	if n <= 0 {
		n = DefaultMaxConns
	}
	return netutil.LimitListener(ln, n)
}

// writeDeadline gives every request a write deadline WriteTimeout from now.
func writeDeadline(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ExtendWriteDeadline(w, 0)
		h.ServeHTTP(w, r)
	})
}

// ExtendWriteDeadline sets the reply's write deadline to extra plus
// WriteTimeout from now: for a handler that legitimately takes extra before
// it answers (an acquire's wait, a profile's duration). ReadTimeout needs no
// such extension: net/http clears the read deadline once the request is
// read. A ResponseWriter that has no deadline (a test recorder) is left as
// it is.
func ExtendWriteDeadline(w http.ResponseWriter, extra time.Duration) {
	http.NewResponseController(w).SetWriteDeadline(time.Now().Add(extra + WriteTimeout))
}
