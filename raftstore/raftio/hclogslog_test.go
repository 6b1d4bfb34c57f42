package raftio

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

func TestRaftLogsIntoSlog(t *testing.T) {
	var out bytes.Buffer
	lg := slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h := hclog.New(&hclog.LoggerOptions{Name: "raft", Output: &SlogWriter{Log: lg}, JSONFormat: true, Level: hclog.Debug})
	h.Warn("heartbeat timeout reached, starting election", "last-leader-addr", "127.0.0.1:7379")
	h.Debug("votes", "needed", 2)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d lines: %q", len(lines), out.String())
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatal(err)
	}
	if rec["level"] != "WARN" || rec["msg"] != "heartbeat timeout reached, starting election" || rec["module"] != "raft" ||
		rec["last-leader-addr"] != "127.0.0.1:7379" || rec["source"] != "raft" {
		t.Fatalf("record = %v", rec)
	}
	if !strings.Contains(lines[1], `"level":"DEBUG"`) || !strings.Contains(lines[1], `"needed":2`) {
		t.Fatalf("second record = %s", lines[1])
	}
}
