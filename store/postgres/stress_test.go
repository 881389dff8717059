package postgres_test

import (
	"testing"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/dbtest"
)

// TestStress: workers on two pools, short leases that some publishes
// outlast, failures retried: each event completes once, keys in order.
func TestStress(t *testing.T) {
	for _, ordered := range []bool{false, true} {
		name := "unordered"
		if ordered {
			name = "ordered"
		}
		t.Run(name, func(t *testing.T) {
			dbtest.Stress(t, func(tb testing.TB) store.Store { return openStore(tb) }, ordered)
		})
	}
}
