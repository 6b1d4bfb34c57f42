package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// keepaliveNote says what a keepalive is here, in every mixed report.
const (
	keepaliveNote        = "keepalive = PEXPIRE of one held lock through a compare-and-pexpire script (EVALSHA): a replicated write per lock (-sessions: lockd's session keepalive instead)"
	sessionKeepaliveNote = "locks on one lockd session per client (LOCK.ACQUIRE … SESSION id); keepalive = SESSION.KEEPALIVE, which renews every lock the client holds and writes nothing to the log"
)

// result is the report of one run (and the -json output).
type result struct {
	Workload    string   `json:"workload"`
	Etcd        string   `json:"etcd,omitempty"`     // the -etcd recipe; empty: RESP
	Lock        bool     `json:"lock,omitempty"`     // LOCK.ACQUIRE / LOCK.RELEASE
	Sessions    bool     `json:"sessions,omitempty"` // mixed on lockd sessions
	WaitMS      int64    `json:"wait_ms,omitempty"`
	Addrs       []string `json:"addrs"`
	Clients     int      `json:"clients"`
	Pipeline    int      `json:"pipeline"`
	Names       int      `json:"names,omitempty"` // contended
	TTLMS       int64    `json:"ttl_ms"`
	Fence       bool     `json:"fence"`
	Interrupted bool     `json:"interrupted,omitempty"`

	Seconds   float64 `json:"seconds"`
	Ops       uint64  `json:"ops"` // replies that were not errors
	OpsPerSec float64 `json:"ops_per_sec"`
	Grants    uint64  `json:"grants"` // SET NX that wrote (with -etcd: acquires that took the lock)
	// GrantsPerSec is the rate of grants: on one contended name, the
	// hand-overs per second.
	GrantsPerSec float64 `json:"grants_per_sec"`
	Taken        uint64  `json:"taken"` // SET NX that found the name taken
	// Lost counts releases and keepalives that found the lock gone or another
	// owner's, and reads that found it gone: leases that ended under a holder.
	Lost   uint64      `json:"lost"`
	Errors errorCounts `json:"errors"`

	FenceChecked    uint64 `json:"fence_checked,omitempty"` // grants whose token was checked
	FenceViolations uint64 `json:"fence_violations"`
	// MixFallbacks counts mixed slots dealt as release/keepalive/read/try-lock
	// that became acquires because the client held no lock to use.
	MixFallbacks uint64   `json:"mix_fallbacks,omitempty"`
	Mix          mixShare `json:"mix,omitempty"`
	Note         string   `json:"note,omitempty"`

	Kinds        []kindResult `json:"kinds"`
	ErrorSamples []string     `json:"error_samples,omitempty"`
}

type errorCounts struct {
	Total          uint64 `json:"total"`
	TryAgain       uint64 `json:"tryagain"`
	UnknownOutcome uint64 `json:"unknownoutcome"`
	Other          uint64 `json:"other"`
}

func (e *errorCounts) add(c [numErrClasses]uint64) {
	e.TryAgain += c[ecTryAgain]
	e.UnknownOutcome += c[ecUnknownOutcome]
	e.Other += c[ecOther]
	e.Total += c[ecTryAgain] + c[ecUnknownOutcome] + c[ecOther]
}

// mixShare is the realised share of each kind among the operations sent.
type mixShare map[string]float64

// kindResult is the latency of one operation kind, over its non-error replies
// (errors are counted, not timed). With -pipeline > 1, a command's latency is
// its batch's round trip.
type kindResult struct {
	Kind   string      `json:"kind"`
	Count  uint64      `json:"count"`
	Errors errorCounts `json:"errors"`
	MeanMS float64     `json:"mean_ms"`
	P50MS  float64     `json:"p50_ms"`
	P99MS  float64     `json:"p99_ms"`
	P999MS float64     `json:"p999_ms"`
	MaxMS  float64     `json:"max_ms"`
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// summarize merges the workers' counters into the report.
func summarize(cfg *config, s *shared, workers []*stats, elapsed time.Duration, interrupted bool) *result {
	r := &result{
		Workload: cfg.workload, Etcd: cfg.etcd, Lock: cfg.lock, Sessions: cfg.sessions, WaitMS: cfg.wait.Milliseconds(), Addrs: cfg.addrs, Clients: cfg.clients, Pipeline: cfg.pipeline,
		TTLMS: cfg.ttl.Milliseconds(), Fence: cfg.fence, Interrupted: interrupted,
		Seconds: elapsed.Seconds(),
	}
	if cfg.workload == "contended" {
		r.Names = cfg.names
	}
	var lat [numKinds]hist
	var count [numKinds]uint64
	var errs [numKinds][numErrClasses]uint64
	for _, w := range workers {
		for k := kind(0); k < numKinds; k++ {
			lat[k].merge(&w.lat[k])
			count[k] += w.count[k]
			for c := range errs[k] {
				errs[k][c] += w.errs[k][c]
			}
		}
		r.Grants += w.grants
		r.Taken += w.taken
		r.Lost += w.lost
		r.MixFallbacks += w.fallbacks
	}
	var sent uint64
	for k := kind(0); k < numKinds; k++ {
		kr := kindResult{Kind: k.String(), Count: count[k]}
		kr.Errors.add(errs[k])
		if kr.Count == 0 && kr.Errors.Total == 0 {
			continue
		}
		h := &lat[k]
		kr.MeanMS, kr.P50MS, kr.P99MS = ms(h.mean()), ms(h.quantile(0.50)), ms(h.quantile(0.99))
		kr.P999MS, kr.MaxMS = ms(h.quantile(0.999)), ms(time.Duration(h.max))
		r.Kinds = append(r.Kinds, kr)
		r.Ops += kr.Count
		r.Errors.add(errs[k])
		sent += kr.Count + kr.Errors.Total
	}
	if r.Seconds > 0 {
		r.OpsPerSec = float64(r.Ops) / r.Seconds
		r.GrantsPerSec = float64(r.Grants) / r.Seconds
	}
	if cfg.workload == "mixed" {
		r.Note = keepaliveNote
		if cfg.sessions {
			r.Note = sessionKeepaliveNote
		}
		r.Mix = mixShare{}
		for _, kr := range r.Kinds {
			if sent > 0 {
				r.Mix[kr.Kind] = float64(kr.Count+kr.Errors.Total) / float64(sent)
			}
		}
	}
	r.FenceChecked, r.FenceViolations = s.checked.Load(), s.violations.Load()
	s.mu.Lock()
	r.ErrorSamples = append([]string(nil), s.errSamples...)
	s.mu.Unlock()
	return r
}

func writeJSON(w io.Writer, r *result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// writeTable prints the report as two aligned tables (the run, then latency
// per operation kind) whose header rows name the columns, so that scripts can
// find a column by name.
func writeTable(out io.Writer, r *result) error {
	var b strings.Builder
	server := ""
	if r.Etcd != "" {
		server = "etcd (" + r.Etcd + ") "
	}
	fmt.Fprintf(&b, "lockbench: %s against %s%s, %d clients, pipeline %d, ttl %dms", r.Workload,
		server, strings.Join(r.Addrs, ","), r.Clients, r.Pipeline, r.TTLMS)
	if r.Names > 0 {
		fmt.Fprintf(&b, ", %d names", r.Names)
	}
	switch {
	case r.Lock && r.WaitMS > 0:
		fmt.Fprintf(&b, ", LOCK.ACQUIRE … WAIT %d", r.WaitMS)
	case r.Lock:
		b.WriteString(", LOCK.ACQUIRE")
	case r.Sessions:
		b.WriteString(", sessions")
	}
	switch {
	case r.Fence && r.Etcd != "":
		b.WriteString(", revisions checked as fencing tokens")
	case r.Fence:
		b.WriteString(", FENCE")
	}
	if r.Interrupted {
		b.WriteString(" (interrupted)")
	}
	b.WriteString("\n")
	if r.Pipeline > 1 {
		b.WriteString("latency of a pipelined command: the round trip of its batch\n")
	}
	if r.Note != "" {
		fmt.Fprintf(&b, "note: %s\n", r.Note)
	}
	if r.Mix != nil {
		var parts []string
		for k := kind(0); k < numKinds; k++ {
			if share, ok := r.Mix[k.String()]; ok {
				parts = append(parts, fmt.Sprintf("%s %.1f%%", k, 100*share))
			}
		}
		fmt.Fprintf(&b, "mix: %s (%d fallbacks to acquire)\n", strings.Join(parts, ", "), r.MixFallbacks)
	}
	b.WriteString("\n")

	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tseconds\tops\tops/s\tgrants\tgrants/s\ttaken\tlost\terrors\tTRYAGAIN\tUNKNOWNOUTCOME\tother\tfence_violations\t")
	violations := "-"
	if r.Fence && r.Workload == "contended" {
		violations = fmt.Sprint(r.FenceViolations)
	}
	fmt.Fprintf(tw, "%s\t%.2f\t%d\t%.0f\t%d\t%.0f\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t\n", r.Workload, r.Seconds, r.Ops, r.OpsPerSec,
		r.Grants, r.GrantsPerSec, r.Taken, r.Lost, r.Errors.Total, r.Errors.TryAgain, r.Errors.UnknownOutcome, r.Errors.Other, violations)
	if err := tw.Flush(); err != nil {
		return err
	}
	b.WriteString("\n")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "op\tcount\terrors\tmean_ms\tp50_ms\tp99_ms\tp99.9_ms\tmax_ms\t")
	for _, k := range r.Kinds {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t\n", k.Kind, k.Count, k.Errors.Total,
			k.MeanMS, k.P50MS, k.P99MS, k.P999MS, k.MaxMS)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.Fence && r.Workload == "contended" {
		fmt.Fprintf(&b, "\nfencing: %d grants checked, %d violations (tokens for one name must strictly increase)\n", r.FenceChecked, r.FenceViolations)
	}
	if len(r.ErrorSamples) > 0 {
		b.WriteString("\nfirst errors:\n")
		for _, e := range r.ErrorSamples {
			fmt.Fprintf(&b, "  %s\n", e)
		}
	}
	_, err := io.WriteString(out, b.String())
	return err
}
