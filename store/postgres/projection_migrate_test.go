package postgres_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store"
)

// TestProjectionUpgradeToOpenState upgrades a version-1 projection table
// holding rows in every state (processing, failed, dead, done old and new,
// of two tenants, with their kept events) to version 2, whose state index
// holds unfinished rows only and whose BRIN index serves retention, while
// batch applies go on; then checks that every row is unchanged and that
// the operations the indexes serve work: lists of each state, the due
// failed rows (off the new index), status counts, retention of old done
// rows only, replay of a dead row.
func TestProjectionUpgradeToOpenState(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := openStore(t)
	table := testenv.Name("herald_pe_up")
	t.Cleanup(func() { _, _ = s.DB().Exec(`DROP TABLE IF EXISTS "` + table + `"`) })
	if err := s.MigrateProjectionsTo(ctx, table, 1); err != nil {
		t.Fatal(err)
	}
	q := `"` + table + `"`
	if _, err := s.DB().ExecContext(ctx, `INSERT INTO `+q+` (projection, tenant, event_id, state, attempts, last_error,
  lease_until, next_attempt_at, updated_at, event_type, topic, partition_key, headers, payload) VALUES
  ('p', '', 'processing-1', 'processing', 0, '', now() + interval '1 hour', NULL, now(), 'T', 't', '', '{}', NULL),
  ('p', '', 'failed-1', 'failed', 2, 'boom', NULL, now() - interval '1 second', now(), 'T', 't', 'k1', '{"a":"b"}', '\x01'),
  ('p', 't1', 'dead-1', 'dead', 5, 'gave up', NULL, NULL, now(), 'T', 't', 'k2', '{}', '\x02'),
  ('p', '', 'done-old', 'done', 0, '', NULL, NULL, now() - interval '2 days', '', '', '', '{}', NULL),
  ('p', 't1', 'done-new', 'done', 0, '', NULL, NULL, now(), '', '', '', '{}', NULL)`); err != nil {
		t.Fatal(err)
	}
	before := projectionRows(t, s.DB(), q)

	// Batch applies go on while the table is upgraded in place.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	live := 0
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			ps := make([]store.ApplyParams, 8)
			for j := range ps {
				ps[j] = store.ApplyParams{Lease: time.Minute, ProjectionKey: store.ProjectionKey{Table: table, Projection: "p",
					EventID: fmt.Sprintf("live-%d-%d", i, j)}}
			}
			if _, err := s.ApplyBatch(ctx, ps, func(*sql.Tx, int) error { return nil }); err != nil {
				t.Errorf("apply during the upgrade: %v", err)
				return
			}
			live += len(ps)
		}
	})
	time.Sleep(50 * time.Millisecond)
	err := s.MigrateProjections(ctx, table)
	time.Sleep(50 * time.Millisecond)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	after := projectionRows(t, s.DB(), q)
	for key, row := range before {
		if after[key] != row {
			t.Errorf("row %s changed by the upgrade:\n before %s\n after  %s", key, row, after[key])
		}
	}
	if want := len(before) + live; len(after) != want {
		t.Errorf("%d rows after the upgrade, want %d (%d live applies)", len(after), want, live)
	}
	checkOpenStateIndexes(t, s.DB(), table)

	list := func(state store.ProjectionState, due bool) []string {
		t.Helper()
		rows, err := s.ListProjection(ctx, store.ProjectionListParams{Table: table, Projection: "p", State: state, Due: due, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range rows {
			ids = append(ids, r.EventID)
		}
		return ids
	}
	for _, tc := range []struct {
		state store.ProjectionState
		due   bool
		want  string
	}{
		{store.ProjectionProcessing, false, "processing-1"},
		{store.ProjectionFailed, true, "failed-1"},
		{store.ProjectionDead, false, "dead-1"},
	} {
		if got := strings.Join(list(tc.state, tc.due), ","); got != tc.want {
			t.Errorf("list %s (due %v): %s, want %s", tc.state, tc.due, got, tc.want)
		}
	}
	if done := list(store.ProjectionDone, false); len(done) != 10 || done[0] != "done-old" {
		t.Errorf("list done: %v, want 10 rows from done-old on", done)
	}
	if _, err := s.ListProjection(ctx, store.ProjectionListParams{Table: table, Projection: "p", State: "finished"}); err == nil ||
		!strings.Contains(err.Error(), `"finished"`) {
		t.Errorf("list of an unknown state: %v, want an error naming it", err)
	}
	stats, err := s.ProjectionStats(ctx, table, "p")
	if err != nil || len(stats) != 1 {
		t.Fatalf("stats: %v, %v", stats, err)
	}
	if st := stats[0]; st.Processing != 1 || st.Failed != 1 || st.Dead != 1 || st.Done != int64(2+live) {
		t.Errorf("stats %+v, want 1 processing, 1 failed, 1 dead, %d done", st, 2+live)
	}
	if n, err := s.CleanupProjection(ctx, table, "p", 24*time.Hour, 100); err != nil || n != 1 {
		t.Errorf("cleanup of done rows older than a day: %d rows, %v; want done-old only", n, err)
	}
	if n, err := s.ReplayProjection(ctx, table, "p", []string{"dead-1"}); err != nil || n != 1 {
		t.Errorf("replay dead-1: %d, %v", n, err)
	}
}

// projectionRows returns every row of the projection table q as JSON, by
// its key.
func projectionRows(t *testing.T, db *sql.DB, q string) map[string]string {
	t.Helper()
	rows, err := db.Query(`SELECT projection || '/' || tenant || '/' || event_id, row_to_json(r)::text FROM ` + q + ` r`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var key, row string
		if err := rows.Scan(&key, &row); err != nil {
			t.Fatal(err)
		}
		out[key] = row
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkOpenStateIndexes checks version 2's indexes on table, and that the
// due failed rows are read off the partial one when the planner may not
// scan the table (it would on so few rows).
func checkOpenStateIndexes(t *testing.T, db *sql.DB, table string) {
	t.Helper()
	rows, err := db.Query("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = $1", table)
	if err != nil {
		t.Fatal(err)
	}
	defs := map[string]string{}
	for rows.Next() {
		var name, def string
		if err := rows.Scan(&name, &def); err != nil {
			t.Fatal(err)
		}
		defs[strings.TrimPrefix(name, table)] = def
	}
	rows.Close()
	if _, ok := defs["_state"]; ok {
		t.Errorf("version 1's state index is still there: %v", defs)
	}
	if !strings.Contains(defs["_open_state"], "WHERE (state <> 'done'::text)") {
		t.Errorf("_open_state: %q, want a partial index on unfinished rows", defs["_open_state"])
	}
	if !strings.Contains(defs["_done_age"], "USING brin (updated_at)") {
		t.Errorf("_done_age: %q, want a BRIN index on updated_at", defs["_done_age"])
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	// Off: a scan of the whole table, and a sort, which the index on
	// (projection, state, updated_at) makes unneeded. On a table this
	// small the planner may otherwise prefer the primary key and a sort
	// once autovacuum analyzed it (seen under load).
	if _, err := tx.Exec("SET LOCAL enable_seqscan = off"); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("SET LOCAL enable_sort = off"); err != nil {
		t.Fatal(err)
	}
	var plan strings.Builder
	prows, err := tx.Query(`EXPLAIN SELECT event_id FROM "` + table + `" WHERE projection = 'p' AND state = 'failed' ORDER BY updated_at LIMIT 10`)
	if err != nil {
		t.Fatal(err)
	}
	for prows.Next() {
		var line string
		if err := prows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(line + "\n")
	}
	prows.Close()
	if !strings.Contains(plan.String(), table+"_open_state") {
		t.Errorf("failed rows are not read off _open_state:\n%s", plan.String())
	}
}
