package verify

import (
	"fmt"
	"strings"
	"testing"

	"github.com/heraldhq/herald/store"
)

// ledgerOf writes n events of key "k" in one committed sequence, plus a
// rolled-back one, and reads them back in the order given (1-based seqs;
// 0 is the rolled-back event).
func ledgerOf(n int, read ...int) *ledger {
	led := newLedger()
	ids := make([]string, n+1)
	for i := range ids {
		ids[i] = fmt.Sprintf("e%d", i)
	}
	led.write(ids[:1], "", nil)
	led.end(ids[:1], rolledBack)
	for i := 1; i <= n; i++ {
		led.write(ids[i:i+1], "k", []int{i})
		led.end(ids[i:i+1], committed)
	}
	for _, r := range read {
		led.receive(ids[r])
	}
	return led
}

func verdictOf(t *testing.T, r *report, check string) verdict {
	t.Helper()
	for _, v := range r.Verdicts {
		if v.Check == check {
			return v
		}
	}
	t.Fatalf("no verdict %q in %+v", check, r.Verdicts)
	return verdict{}
}

func TestReconcileAllHeld(t *testing.T) {
	r := &report{}
	// A duplicate of #2 after #3 is allowed: order looks at first copies.
	r.reconcile(ledgerOf(3, 1, 2, 3, 2), store.LaneStats{Delivered: 3}, true, false, "", nil)
	if !r.Held || r.Committed != 3 || r.RolledBack != 1 || r.Duplicates != 1 || r.Received != 3 {
		t.Fatalf("report %+v", r)
	}
}

func TestReconcileFindsEachBrokenGuarantee(t *testing.T) {
	for _, tc := range []struct {
		name  string
		led   *ledger
		stats store.LaneStats
		check string
		want  string
	}{
		{"lost", ledgerOf(3, 1, 3), store.LaneStats{}, checkLost, "1 lost"},
		{"phantom", ledgerOf(2, 1, 2, 0), store.LaneStats{}, checkPhantom, "1 phantom"},
		{"order", ledgerOf(3, 1, 3, 2), store.LaneStats{}, checkOrder, "1 out of order"},
		{"dead", ledgerOf(1, 1), store.LaneStats{Dead: 2}, checkDead, "2 dead"},
		{"in flight", ledgerOf(1, 1), store.LaneStats{InFlight: 1}, checkInFlight, "1 in flight"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &report{}
			r.reconcile(tc.led, tc.stats, true, false, "", nil)
			v := verdictOf(t, r, tc.check)
			if r.Held || v.Held || !strings.Contains(v.Detail, tc.want) {
				t.Fatalf("held %v, verdict %+v; want %q failed", r.Held, v, tc.want)
			}
			for _, other := range r.Verdicts {
				if other.Check != tc.check && !other.Held {
					t.Fatalf("%q failed too: %+v", other.Check, other)
				}
			}
			if !strings.Contains(r.text(), "FAILED  "+tc.check) {
				t.Fatalf("text report does not show it:\n%s", r.text())
			}
		})
	}
}

func TestReconcileOrderNotAskedAndInterrupted(t *testing.T) {
	r := &report{}
	r.reconcile(ledgerOf(3, 3, 2, 1), store.LaneStats{}, false, false, "", nil)
	if v := verdictOf(t, r, checkOrder); !v.Skipped || !r.Held {
		t.Fatalf("unordered lane: order verdict %+v, held %v", v, r.Held)
	}
	r = &report{}
	r.reconcile(ledgerOf(3, 1, 2, 3), store.LaneStats{}, true, true, "", nil)
	if r.Held || !strings.Contains(r.text(), "INTERRUPTED") {
		t.Fatalf("an interrupted run is not a pass:\n%s", r.text())
	}
}
