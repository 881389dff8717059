package mapsql

import "testing"

func TestReadsAny(t *testing.T) {
	written := []string{"status", "worker_id"}
	for clause, want := range map[string]bool{
		"json_valid(`payload_json`)":               false,
		"`Status` in ('pending','delivered')":      true,
		"`retry_count` >= 0 and `WORKER_ID` <> ''": true,
		"`statuses` > 0":                           false, // another column, not a prefix match
		"`note` <> 'status'":                       true,  // a literal counts: kept, never wrongly left out
		"`a`+`b` > 0":                              false,
	} {
		if got := ReadsAny(clause, written); got != want {
			t.Errorf("ReadsAny(%q) = %v, want %v", clause, got, want)
		}
	}
}
