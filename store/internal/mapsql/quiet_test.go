package mapsql

import (
	"testing"
	"time"

	"github.com/heraldhq/herald/store"
)

// Rule: claims skip a pending value other than the first for quietPause
// after a read of it came back empty, and read it again at once after a
// read found rows; the first pending value and the in-flight one are
// never skipped (new rows and expired leases wait for nothing more).
func TestAdoptQuietRetryValue(t *testing.T) {
	m := store.Mapping{Statuses: store.Statuses{Pending: store.StatusValues{"pending", "retryable"},
		InFlight: "delivering", Delivered: "delivered", Dead: "dead"}}
	tb := &Table{m: m}
	scope := store.Scope{Table: "wallet_outbox"}
	for _, never := range []string{"pending", "delivering"} {
		if k := tb.quietKey(never, scope); k != "" {
			t.Errorf("%s has a quiet key %q: claims could skip it", never, k)
		}
	}
	key := tb.quietKey("retryable", scope)
	if key == "" || key == tb.quietKey("retryable", store.Scope{Table: "wallet_outbox", IncludeTypes: []string{"A"}}) {
		t.Fatalf("retryable's quiet key %q: want one per scope", key)
	}
	q := &tb.quiet
	if q.skip(key) {
		t.Fatal("skipped before any read")
	}
	q.note(key, true)
	if !q.skip(key) {
		t.Fatal("not skipped right after an empty read")
	}
	q.note(key, false)
	if q.skip(key) {
		t.Fatal("skipped after a read that found rows")
	}
	q.note(key, true)
	time.Sleep(quietPause + 10*time.Millisecond)
	if q.skip(key) {
		t.Fatalf("still skipped %v after the empty read", quietPause)
	}
}
