package postgres

import "testing"

// Rule: a projection table's statistics are stale once it was never
// analyzed and holds rows, or once more than a fifth of what it held (and
// at least 1,000 rows) changed since.
func TestStatsStale(t *testing.T) {
	for _, c := range []struct {
		mods, tuples float64
		want         bool
	}{
		{0, -1, false}, {50, -1, false}, {101, -1, true},
		{999, 0, false}, {1001, 0, true},
		{1500, 10000, false}, {2001, 10000, true},
	} {
		if got := stale(c.mods, c.tuples); got != c.want {
			t.Errorf("stale(%v mods, %v tuples) = %v, want %v", c.mods, c.tuples, got, c.want)
		}
	}
}
