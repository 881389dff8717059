package mapsql

import (
	"testing"

	"github.com/heraldhq/herald/store"
)

// Rule: a needed (status, …) index is served by any index that starts with
// its columns, or by one with the tenant column before them when the
// mapping has a tenant column (a tenant-filtered lane's index); never by an
// index with another column first, nor in another order. The id needs a
// unique index of exactly that column.
func TestAdoptIndexesThatServe(t *testing.T) {
	due := store.IndexInfo{Columns: []string{"status", "next_retry_at_ms"}}
	id := store.IndexInfo{Unique: true, Columns: []string{"event_id"}}
	ix := func(unique bool, cols ...string) []store.IndexInfo {
		return []store.IndexInfo{{Name: "i", Unique: unique, Columns: cols}}
	}
	cases := []struct {
		name   string
		have   []store.IndexInfo
		need   store.IndexInfo
		tenant string
		want   bool
	}{
		{"exact", ix(false, "status", "next_retry_at_ms"), due, "", true},
		{"longer", ix(false, "status", "next_retry_at_ms", "event_id"), due, "", true},
		{"tenant first, tenant mapped", ix(false, "app_code", "status", "next_retry_at_ms"), due, "app_code", true},
		{"tenant first, not mapped", ix(false, "app_code", "status", "next_retry_at_ms"), due, "", false},
		{"another column first", ix(false, "user_id", "status", "next_retry_at_ms"), due, "app_code", false},
		{"other order", ix(false, "next_retry_at_ms", "status"), due, "", false},
		{"status alone", ix(false, "status"), due, "", false},
		{"primary key", ix(true, "event_id"), id, "", true},
		{"not unique", ix(false, "event_id"), id, "", false},
		{"unique with more columns", ix(true, "event_id", "app_code"), id, "", false},
		{"none", nil, due, "", false},
	}
	for _, c := range cases {
		if got := hasIndex(c.have, c.need, c.tenant); got != c.want {
			t.Errorf("%s: hasIndex = %v, want %v", c.name, got, c.want)
		}
	}
}
