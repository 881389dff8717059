package testenv

import (
	"context"
	"log/slog"
	"strings"
	"sync"
)

// LogLines is a slog handler that keeps every record, for tests that
// assert on what a program logged (how many of a message, and in which
// order).
type LogLines struct {
	mu    sync.Mutex
	lines []slog.Record
}

// Enabled, Handle, WithAttrs and WithGroup make a LogLines a slog.Handler.
func (l *LogLines) Enabled(context.Context, slog.Level) bool { return true }
func (l *LogLines) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, r.Clone())
	return nil
}
func (l *LogLines) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *LogLines) WithGroup(string) slog.Handler      { return l }

// Count returns how many records have a message starting with prefix.
func (l *LogLines) Count(prefix string) int { return len(l.Between(0, -1, prefix)) }

// Mark is the number of records so far: a position for Between.
func (l *LogLines) Mark() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.lines)
}

// First is the position of the first record from position from on whose
// message starts with prefix, or -1.
func (l *LogLines) First(from int, prefix string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := from; i < len(l.lines); i++ {
		if strings.HasPrefix(l.lines[i].Message, prefix) {
			return i
		}
	}
	return -1
}

// Between renders the records at positions [from, to) (to -1: up to the
// last) whose message starts with prefix, attributes included, for failure
// messages.
func (l *LogLines) Between(from, to int, prefix string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if to < 0 || to > len(l.lines) {
		to = len(l.lines)
	}
	var out []string
	for _, r := range l.lines[from:to] {
		if strings.HasPrefix(r.Message, prefix) {
			text := r.Message
			r.Attrs(func(a slog.Attr) bool { text += " " + a.String(); return true })
			out = append(out, text)
		}
	}
	return out
}
