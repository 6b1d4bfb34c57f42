//go:build faults

package httpapi

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
)

// FaultControl is the fault-injection surface of a process started for the
// test/ fault suite (lockd's hidden fault flags). Production processes have
// none, and then the endpoint below does not exist: this file builds only
// with the faults tag, so the default binary cannot serve it.
type FaultControl interface {
	// SetFault sets one named fault (for instance "fsync_delay" to "200ms"); an
	// unknown name or a bad value is an error and changes nothing.
	SetFault(name, value string) error
	// Faults reports every fault's current setting by name.
	Faults() map[string]string
}

// WithFaults returns h with the fault endpoint mounted:
//
//	GET  /debug/faults               the current settings, as a JSON object
//	POST /debug/faults?name=value&…  set faults (in name order), then as GET
//
// A bad name or value answers 400 with the error text; faults before it in
// name order stay set.
func WithFaults(h http.Handler, fc FaultControl) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", h)
	report := func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(fc.Faults())
	}
	mux.HandleFunc("GET /debug/faults", func(w http.ResponseWriter, _ *http.Request) { report(w) })
	mux.HandleFunc("POST /debug/faults", func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		names := make([]string, 0, len(r.Form))
		for k := range r.Form {
			names = append(names, k)
		}
		slices.Sort(names)
		for _, k := range names {
			v := r.Form[k]
			if err := fc.SetFault(k, strings.Join(v, ",")); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
		}
		report(w)
	})
	return mux
}
