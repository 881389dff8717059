package projector

import (
	"fmt"
	"testing"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/store"
)

// TestLockOrderKeepsKeyOrder sorts a batch by its first statement's
// arguments: events without a partition key move freely, one key's events
// stay together in the order received, sorted where their first one sorts.
func TestLockOrderKeepsKeyOrder(t *testing.T) {
	type ev struct {
		id, key string
		user    int64
	}
	in := []ev{{"a", "", 9}, {"b", "k", 5}, {"c", "", 2}, {"d", "k", 1}, {"e", "", 5}, {"f", "k", 7}, {"g", "", int64(-3)}}
	msgs := make([]broker.Received, len(in))
	ps := make([]store.ApplyParams, len(in))
	stmts := make([][]store.Stmt, len(in))
	errs := make([]error, len(in))
	for i, e := range in {
		msgs[i].Event = herald.Event{ID: e.id, PartitionKey: e.key}
		ps[i].EventID = e.id
		stmts[i] = []store.Stmt{{SQL: "x", Args: []any{e.user, e.id}}}
		if e.id == "e" {
			errs[i] = fmt.Errorf("err of %s", e.id)
		}
	}
	lockOrder(msgs, ps, stmts, errs)
	got := ""
	for i, m := range msgs {
		got += m.Event.ID
		if ps[i].EventID != m.Event.ID || stmts[i][0].Args[1] != m.Event.ID || (errs[i] != nil) != (m.Event.ID == "e") {
			t.Fatalf("item %d (%s): params, statements and errors not permuted with it", i, m.Event.ID)
		}
	}
	// g(-3) c(2), then key k where b (5, "b") sorts, its events as
	// received (b d f), then e (5, "e"), a (9).
	if want := "gcbdfea"; got != want {
		t.Fatalf("order %s, want %s", got, want)
	}
}

// TestCompareArgsIsTotal orders mixed argument types consistently.
func TestCompareArgsIsTotal(t *testing.T) {
	vals := []any{int64(2), int64(10), "10", "9", 1.5, []byte("b"), nil, true}
	for _, a := range vals {
		for _, b := range vals {
			x, y := compareArgs([]any{a}, []any{b}), compareArgs([]any{b}, []any{a})
			if x != -y || (x == 0) != (fmt.Sprint(a) == fmt.Sprint(b) && fmt.Sprintf("%T", a) == fmt.Sprintf("%T", b)) {
				t.Fatalf("compare(%v, %v) = %d, reverse %d", a, b, x, y)
			}
		}
	}
	if compareArgs([]any{int64(2)}, []any{int64(10)}) >= 0 {
		t.Fatal("integers compare as numbers")
	}
}
