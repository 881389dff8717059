package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"
)

// Rule: past its deadline Next still takes the transactions the
// connection has already read from the server (a burst fills the batch
// without a linger), and waits for none that have not arrived.
func TestLogicalPastDeadlineTakesBuffered(t *testing.T) {
	e := newLogicalEnv(t)
	st := e.open("buffered")
	e.insert("a1")
	e.insert("a2")
	e.insert("a3")
	time.Sleep(500 * time.Millisecond) // all three sent: one read takes them in
	first, err := st.Next(context.Background(), 1, 30*time.Second)
	if err != nil || len(first.Records) != 1 || first.Records[0].Event.ID != "a1" {
		t.Fatalf("first Next = %+v, %v; want a1 alone (limit 1)", first.Records, err)
	}
	rest, err := st.Next(context.Background(), 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range rest.Records {
		ids = append(ids, r.Event.ID)
	}
	if strings.Join(ids, " ") != "a2 a3" {
		t.Fatalf("Next past its deadline = %v, want the buffered a2 a3", ids)
	}
	if err := st.Record(context.Background(), rest.End, nil); err != nil {
		t.Fatal(err)
	}
	none, err := st.Next(context.Background(), 100, 0)
	if err != nil || len(none.Records) != 0 {
		t.Fatalf("Next with nothing sent = %+v, %v; want no records", none.Records, err)
	}
}
