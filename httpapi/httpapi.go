// Package httpapi is lockd's HTTP door: health, readiness and the seed's /v1
// lock API (sessions and locks, on the same commands as RESP).
package httpapi

import (
	"net/http"
)

// Store is what the HTTP door needs from the replicated store.
type Store interface {
	Doer
	// Serving reports whether this node can serve clients: it leads, or it
	// follows a known leader it forwards to.
	Serving() bool
}

// Handler returns the HTTP handler: GET /metrics (Prometheus, when metrics is
// given), GET /healthz (the process is up) and
// GET /readyz (200 while this node can serve, leading or forwarding to a known
// leader; 503 while there is none).
func Handler(store Store, metrics http.Handler) http.Handler {
	mux := http.NewServeMux()
	if metrics != nil {
		mux.Handle("GET /metrics", metrics)
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !store.Serving() {
			http.Error(w, "not ready: no leader\n", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ready\n"))
	})
	v1{store}.register(mux)
	return mux
}
