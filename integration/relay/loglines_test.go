package relay

import (
	"context"
	"log/slog"
	"strings"
	"sync"
)

// logLines counts log records by message.
type logLines struct {
	mu    sync.Mutex
	lines []slog.Record
}

func (l *logLines) Enabled(context.Context, slog.Level) bool { return true }
func (l *logLines) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, r.Clone())
	return nil
}
func (l *logLines) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logLines) WithGroup(string) slog.Handler      { return l }

// count returns how many records have a message starting with prefix.
func (l *logLines) count(prefix string) int { return len(l.between(0, -1, prefix)) }

// mark is the number of records so far: a position for between.
func (l *logLines) mark() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.lines)
}

// first is the position of the first record from position from on whose
// message starts with prefix, or -1.
func (l *logLines) first(from int, prefix string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := from; i < len(l.lines); i++ {
		if strings.HasPrefix(l.lines[i].Message, prefix) {
			return i
		}
	}
	return -1
}

// between renders the records at positions [from, to) (to -1: up to the
// last) whose message starts with prefix, attributes included, for failure
// messages.
func (l *logLines) between(from, to int, prefix string) []string {
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
