package mysql_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store"
)

// checkedMapping maps the tables of TestAdoptMappedUpdatesSkipChecks.
var checkedMapping = store.Mapping{
	Columns: store.Columns{ID: "event_id", Type: "event_type", Payload: "payload_json", Status: "status",
		NextAttempt: "next_retry_at_ms", LeaseUntil: "lock_until_ms", LeaseOwner: "worker_id"},
	Statuses: store.Statuses{Pending: store.StatusValues{"pending"}, InFlight: "delivering",
		Delivered: "delivered", Dead: "dead"},
	TimeUnit: store.TimeEpochMillis,
}

// TestAdoptMappedUpdatesSkipChecks: on MariaDB, claims and marks of a mapped
// table leave out its CHECK constraints when none reads a column they
// write (a JSON payload's json_valid, parsed at every UPDATE otherwise),
// and keep them when one does. The proof is a row whose payload breaks its
// check (written with checks off, as a bulk load may): relayed where the
// checks are left out, refused by the claim where a check reads status.
func TestAdoptMappedUpdatesSkipChecks(t *testing.T) {
	s := openStore(t)
	if !s.MariaDB() {
		t.Skip("check_constraint_checks is MariaDB's")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name, extra string
		skipped     bool
	}{
		{name: "payload check only", skipped: true},
		{name: "a check reads status", extra: ", CONSTRAINT known_status CHECK (status IN ('pending', 'delivering', 'delivered', 'dead'))"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			table := testenv.Name("herald_checks")
			t.Cleanup(func() { _, _ = s.DB().Exec("DROP TABLE IF EXISTS `" + table + "`") })
			mustExec(t, s, "CREATE TABLE `"+table+"` (event_id VARCHAR(64) PRIMARY KEY, event_type VARCHAR(64) NOT NULL,"+
				" payload_json JSON NOT NULL, status CHAR(16) NOT NULL DEFAULT 'pending', next_retry_at_ms BIGINT NOT NULL DEFAULT 0,"+
				" lock_until_ms BIGINT NOT NULL DEFAULT 0, worker_id CHAR(64) NOT NULL DEFAULT ''"+tc.extra+")")
			insertUnchecked(t, s, "INSERT INTO `"+table+"` (event_id, event_type, payload_json) VALUES ('e1', 'T', 'not json')")
			if err := s.MapTable(table, checkedMapping); err != nil {
				t.Fatal(err)
			}
			recs, err := s.Claim(ctx, store.ClaimParams{Scope: store.Scope{Table: table}, Owner: "w", Token: 7,
				Lease: time.Minute, Limit: 10})
			if !tc.skipped {
				if err == nil || !strings.Contains(err.Error(), "CONSTRAINT") {
					t.Fatalf("claim: %v, %d records; want the payload's check to refuse it", err, len(recs))
				}
				return
			}
			if err != nil || len(recs) != 1 {
				t.Fatalf("claim: %v, %d records; want the row claimed", err, len(recs))
			}
			lost, err := s.Complete(ctx, store.Fence{Table: table, Token: 7}, []store.Delivery{{ID: recs[0].ID}})
			if err != nil || len(lost) != 0 {
				t.Fatalf("complete: lost %v, %v", lost, err)
			}
			var status string
			if err := s.DB().QueryRow("SELECT status FROM `" + table + "`").Scan(&status); err != nil || status != "delivered" {
				t.Fatalf("status %q, %v; want delivered", status, err)
			}
		})
	}
}

func mustExec(t *testing.T, s interface{ DB() *sql.DB }, q string) {
	t.Helper()
	if _, err := s.DB().Exec(q); err != nil {
		t.Fatal(err)
	}
}

// insertUnchecked runs q with the session's checks off.
func insertUnchecked(t *testing.T, s interface{ DB() *sql.DB }, q string) {
	t.Helper()
	ctx := context.Background()
	conn, err := s.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, stmt := range []string{"SET SESSION check_constraint_checks = 0", q, "SET SESSION check_constraint_checks = 1"} {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
}
