package kafka

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Rule: a fetch error that comes beside records is logged, naming the
// partition and the error, once per errorLogEvery while it repeats; another
// partition's error, or another error, is logged at once.
func TestFetchErrorsBesideRecordsAreLogged(t *testing.T) {
	var buf bytes.Buffer
	e := newErrorLog(slog.New(slog.NewTextHandler(&buf, nil)))
	denied := errors.New("TOPIC_AUTHORIZATION_FAILED")
	p3 := kgo.FetchError{Topic: "events", Partition: 3, Err: denied}
	start := time.Now()
	e.log([]kgo.FetchError{p3}, start)
	e.log([]kgo.FetchError{p3}, start.Add(time.Second))
	e.log([]kgo.FetchError{p3, {Topic: "events", Partition: 4, Err: denied}}, start.Add(2*time.Second))
	e.log([]kgo.FetchError{p3}, start.Add(errorLogEvery+time.Second))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []string{"partition=3", "partition=4", "partition=3"}
	if len(lines) != len(want) {
		t.Fatalf("logged %d lines, want %d:\n%s", len(lines), len(want), buf.String())
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w) || !strings.Contains(lines[i], "TOPIC_AUTHORIZATION_FAILED") || !strings.Contains(lines[i], "level=WARN") {
			t.Errorf("line %d = %q, want a warning with %s and the error", i, lines[i], w)
		}
	}
}
