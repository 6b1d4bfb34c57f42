package raftio

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"sort"
	"strings"
	"sync"
)

// SlogWriter receives hashicorp/raft's log lines (hclog in JSON format, one
// object per line: hclog.LoggerOptions.JSONFormat) and logs each through Log
// at its level, with its module and fields as attributes: Raft's messages
// land in lockd's structured log. Safe for concurrent use; a line without a
// newline yet waits for the rest.
type SlogWriter struct {
	Log *slog.Logger
	mu  sync.Mutex
	buf []byte
}

func (w *SlogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.line(w.buf[:i])
		w.buf = w.buf[i+1:]
	}
}

func (w *SlogWriter) line(b []byte) {
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		w.Log.Info(string(bytes.TrimSpace(b)), "source", "raft")
		return
	}
	msg, _ := m["@message"].(string)
	level := slog.LevelInfo
	switch l, _ := m["@level"].(string); strings.ToLower(l) {
	case "trace", "debug":
		level = slog.LevelDebug
	case "warn":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	}
	attrs := []any{"source", "raft"}
	if mod, ok := m["@module"].(string); ok {
		attrs = append(attrs, "module", mod)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		if !strings.HasPrefix(k, "@") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		attrs = append(attrs, k, m[k])
	}
	w.Log.Log(context.Background(), level, msg, attrs...)
}
