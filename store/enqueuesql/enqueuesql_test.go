package enqueuesql

import (
	"testing"
	"time"
)

// The statements are the table contract (docs/sql.md): these are the exact
// texts the root package sent before they moved here.
func TestInsertStatements(t *testing.T) {
	const cols = "(event_id, tenant, topic, event_type, partition_key, headers, payload, available_at)"
	rows := []Row{{ID: "a"}, {ID: "b", AvailableAt: time.UnixMilli(1500).UTC()}}
	for name, c := range map[string]struct {
		db   Database
		want string
		at   any
	}{
		"sqlite": {SQLite(), `INSERT INTO "t" ` + cols + ` VALUES (?, ?, ?, ?, ?, ?, ?, COALESCE(?, CAST(unixepoch('subsec') * 1000 AS INTEGER))), ` +
			`(?, ?, ?, ?, ?, ?, ?, COALESCE(?, CAST(unixepoch('subsec') * 1000 AS INTEGER))) ON CONFLICT (event_id) DO NOTHING`, int64(1500)},
		"mysql": {MySQL(), "INSERT INTO `t` " + cols + " VALUES (?, ?, ?, ?, ?, ?, ?, COALESCE(?, UTC_TIMESTAMP(6))), " +
			"(?, ?, ?, ?, ?, ?, ?, COALESCE(?, UTC_TIMESTAMP(6))) ON DUPLICATE KEY UPDATE event_id = event_id", time.UnixMilli(1500).UTC()},
		"postgres": {Postgres(), `INSERT INTO "t" ` + cols + ` VALUES ($1, $2, $3, $4, $5, $6, $7, COALESCE($8::timestamptz, now())), ` +
			`($9, $10, $11, $12, $13, $14, $15, COALESCE($16::timestamptz, now())) ON CONFLICT (event_id) DO NOTHING`, time.UnixMilli(1500).UTC()},
	} {
		q, args := c.db.Insert("t", rows)
		if q != c.want {
			t.Errorf("%s:\n got %s\nwant %s", name, q, c.want)
		}
		if len(args) != 16 || args[7] != nil || args[15] != c.at {
			t.Errorf("%s: available_at args %v, %v; want nil (database clock) and %v", name, args[7], args[15], c.at)
		}
		if p, ok := args[6].([]byte); !ok || p == nil {
			t.Errorf("%s: a nil payload must bind as an empty one, not NULL: %#v", name, args[6])
		}
	}
}
