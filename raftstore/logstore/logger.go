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
// Errorf to error.
type badgerLogger struct {
	l *slog.Logger
}

func (b badgerLogger) Errorf(format string, args ...any) {
	b.log(slog.LevelError, format, args...)
}

func (b badgerLogger) Warningf(format string, args ...any) {
	b.log(slog.LevelWarn, format, args...)
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
