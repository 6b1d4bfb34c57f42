package logstore

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
)

// badgerLogger adapts an *slog.Logger to badger.Logger.
//
// Badger is chatty at info level (table counts, compaction progress), so its
// Infof and Debugf output is demoted to slog debug; Warningf maps to warn and
// Errorf to error, but for the block cache's minutely report (cacheReport),
// also debug.
type badgerLogger struct {
	l *slog.Logger
}

func (b badgerLogger) Errorf(format string, args ...any) {
	b.log(slog.LevelError, format, args...)
}

func (b badgerLogger) Warningf(format string, args ...any) {
	level := slog.LevelWarn
	if cacheReport(format) {
		level = slog.LevelDebug
	}
	b.log(level, format, args...)
}

// cacheReport reports whether a badger warning's format is its cache
// monitor's "might be too small" report (and the life-expectancy histogram
// that follows it). Once a minute badger warns when its block cache keeps
// blocks less than 10 s with a hit ratio under 0.4; lockd keeps that cache
// small on purpose (blockCacheSize: replicas read the newest entries from
// raft's LogCache, and badger's cached blocks would count against the node's
// memory), so under any steady load the warning would fire every minute and
// mean nothing to an operator.
func cacheReport(format string) bool {
	return strings.HasPrefix(format, "%s might be too small. Metrics:") ||
		strings.HasPrefix(format, "Cache life expectancy")
}

func (b badgerLogger) Infof(format string, args ...any) {
	b.log(slog.LevelDebug, format, args...)
}

func (b badgerLogger) Debugf(format string, args ...any) {
	b.log(slog.LevelDebug, format, args...)
}

func (b badgerLogger) log(level slog.Level, format string, args ...any) {
	ctx := context.Background()
	if !b.l.Enabled(ctx, level) {
		return
	}
	msg := strings.TrimSpace(fmt.Sprintf(format, args...))
	if msg == "" {
		return
	}
	b.l.Log(ctx, level, msg, slog.String("component", "badger"))
}
