package rocketmq

import (
	"context"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/apache/rocketmq-client-go/v2/rlog"
)

// RouteLogs implements broker.LogRouter: the RocketMQ client's own lines
// (rlog, logrus on stdout by default) go to l instead, in its format. An
// entry's log_level still filters them (rlog.SetLogLevel, called as each
// client starts).
func (Driver) RouteLogs(l *slog.Logger) {
	r := &slogRLog{l: l}
	r.Level(DefaultLogLevel)
	rlog.SetLogger(r)
}

// slogRLog is an rlog.Logger writing to a slog.Logger.
type slogRLog struct {
	l *slog.Logger
	// min is the slog.Level below which lines are dropped (log_level).
	min atomic.Int64
}

var _ rlog.Logger = (*slogRLog)(nil)

func (r *slogRLog) Debug(msg string, fields map[string]any) { r.log(slog.LevelDebug, msg, fields) }
func (r *slogRLog) Info(msg string, fields map[string]any)  { r.log(slog.LevelInfo, msg, fields) }
func (r *slogRLog) Warning(msg string, fields map[string]any) {
	r.log(slog.LevelWarn, msg, fields)
}
func (r *slogRLog) Error(msg string, fields map[string]any) { r.log(slog.LevelError, msg, fields) }

// Fatal logs at ERROR and exits, as rlog's own logger (logrus) does.
func (r *slogRLog) Fatal(msg string, fields map[string]any) {
	r.log(slog.LevelError, msg, fields)
	os.Exit(1)
}

// Level sets the level below which lines are dropped: debug, info, warn,
// error or fatal, as rlog's own logger reads it (anything else is info).
func (r *slogRLog) Level(level string) {
	min := map[string]slog.Level{"debug": slog.LevelDebug, "warn": slog.LevelWarn, "error": slog.LevelError,
		"fatal": slog.LevelError + 4}[strings.ToLower(level)] // info is the zero Level
	r.min.Store(int64(min))
}

// OutputPath implements rlog.Logger: the program's logger decides where
// lines go, so a path is ignored.
func (r *slogRLog) OutputPath(string) error { return nil }

func (r *slogRLog) log(level slog.Level, msg string, fields map[string]any) {
	if level < slog.Level(r.min.Load()) {
		return
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	attrs := make([]slog.Attr, 0, len(keys))
	for _, k := range keys {
		attrs = append(attrs, slog.Any(k, fields[k]))
	}
	r.l.LogAttrs(context.Background(), level, msg, attrs...)
}
