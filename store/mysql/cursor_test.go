package mysql

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/store"
)

// TestClaimCursorFindsRowsBehindIt: claims under a backlog go on from
// where the last full one ended, and a row that appears behind that point
// (a transaction that committed late: its available_at was set at insert)
// is still claimed, once a claim comes back short or once rescanEvery has
// passed; every row is claimed once.
func TestClaimCursorFindsRowsBehindIt(t *testing.T) {
	for _, tc := range []struct {
		name   string
		starts string // what makes the claim start over
	}{
		{"short batch", "short"},
		{"rescan interval", "interval"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, table := migratedTable(t, "herald_cursor")
			insertPending(t, s, table, "e", 250, "")
			claimed := map[int64]bool{}
			claim := func(want int) []store.Record {
				t.Helper()
				recs := claimFrom(t, s, table)
				for _, r := range recs {
					if claimed[r.ID] {
						t.Fatalf("row %d claimed twice", r.ID)
					}
					claimed[r.ID] = true
				}
				if len(recs) != want {
					t.Fatalf("claimed %d rows, want %d", len(recs), want)
				}
				return recs
			}
			claim(100)
			late := insertPending(t, s, table, "late", 1, "2001-01-01 00:00:00")[0]
			if recs := claim(100); slices.ContainsFunc(recs, func(r store.Record) bool { return r.ID == late }) {
				t.Fatal("the claim after a full one started from the beginning: the cursor is not in use")
			}
			if tc.starts == "short" {
				claim(50) // the rest: short, so the next claim starts over
			} else {
				time.Sleep(rescanEvery + 50*time.Millisecond)
			}
			recs := claim(1 + map[string]int{"short": 0, "interval": 50}[tc.starts])
			if !slices.ContainsFunc(recs, func(r store.Record) bool { return r.ID == late }) {
				t.Fatalf("the claim that started over did not take the late row %d", late)
			}
		})
	}
}

// insertPending writes n pending rows in one statement (so they share one
// available_at: the cursor must tell them apart by id), available at
// availableAt when it is not empty, and returns their ids.
func insertPending(t *testing.T, s *Store, table, prefix string, n int, availableAt string) []int64 {
	t.Helper()
	cols, at := "event_id, topic, event_type, payload", ""
	if availableAt != "" {
		cols, at = cols+", available_at", ", '"+availableAt+"'"
	}
	vals := make([]string, n)
	for i := range vals {
		vals[i] = fmt.Sprintf("('%s-%d', 't', 'T', 'x'%s)", prefix, i, at)
	}
	if _, err := s.DB().Exec("INSERT INTO `" + table + "` (" + cols + ") VALUES " + strings.Join(vals, ", ")); err != nil {
		t.Fatal(err)
	}
	var ids []int64
	rows, err := s.DB().Query("SELECT id FROM `"+table+"` WHERE event_id LIKE ? ORDER BY id", prefix+"-%")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// claimFrom claims up to 100 rows of table for a minute.
func claimFrom(t *testing.T, s *Store, table string) []store.Record {
	t.Helper()
	recs, err := s.Claim(context.Background(), store.ClaimParams{Scope: store.Scope{Table: table},
		Owner: "w1", Token: 1, Lease: time.Minute, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return recs
}
