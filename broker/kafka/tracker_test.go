package kafka

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTrackerCommitsAckedPrefix: acks in any order mark only the offset
// after the longest acked prefix.
func TestTrackerCommitsAckedPrefix(t *testing.T) {
	tr := newTracker()
	for off := int64(10); off < 15; off++ {
		if !tr.add(off, 0) {
			t.Fatalf("add(%d) refused", off)
		}
	}
	for _, step := range []struct{ ack, want int64 }{{12, -1}, {10, 11}, {11, 13}, {14, -1}, {13, 15}} {
		if got := tr.settle(step.ack); got != step.want {
			t.Fatalf("ack %d: next %d, want %d", step.ack, got, step.want)
		}
	}
}

// TestTrackerRewind: when the client hands out offsets again (a reset after
// reported data loss), the partition starts a new tracker and the old
// copies' acks count for nothing. With one tracker, the second copy of an
// offset acked before the first copy was popped stayed pending for ever and
// the partition's commits stopped.
func TestTrackerRewind(t *testing.T) {
	s := &Subscriber{parts: map[partition]*tracker{}}
	key := partition{"events", 2}
	rec := func(off int64) *kgo.Record {
		return &kgo.Record{Topic: key.topic, Partition: key.part, Offset: off, Value: []byte("{}")}
	}
	for off := range int64(6) {
		s.received(rec(off))
	}
	first := s.parts[key]
	for off := int64(3); off < 9; off++ {
		s.received(rec(off))
	}
	second := s.parts[key]
	if second == first || !first.gone {
		t.Fatal("offsets handed out again did not start a new tracker")
	}
	if want := []int64{3, 4, 5, 6, 7, 8}; !slices.Equal(second.pending, want) {
		t.Fatalf("new tracker pending %v, want %v", second.pending, want)
	}
	if got := first.settle(4); got != -1 {
		t.Fatalf("ack on the rewound tracker marked %d", got)
	}
	next := int64(-1)
	for _, off := range []int64{4, 3, 8, 7, 6, 5} {
		next = max(next, second.settle(off))
	}
	if next != 9 {
		t.Fatalf("every record acked after the rewind, marked %d, want 9", next)
	}
}
