package seedwallet

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/projector"
	"github.com/heraldhq/herald/store"
)

// EventFrom reads a wallet message's attributes from its body: the old
// worker's messages carry no others, and Herald's carry the same fields.
var EventFrom = projector.EventFrom{
	ID: projector.Field{Path: "$.eventId"}, Type: projector.Field{Path: "$.eventType"},
	Tenant: projector.Field{Path: "$.appCode"}, Key: projector.Field{Path: "$.userId"},
}

// WallDDL returns the statement that creates the gift wall table: per
// tenant, receiver and gift, how many were received.
func WallDDL(table string) string {
	return "CREATE TABLE " + table + ` (app_code VARCHAR(32) NOT NULL, user_id VARCHAR(64) NOT NULL,
  gift_id VARCHAR(64) NOT NULL, total_count BIGINT NOT NULL, PRIMARY KEY (app_code, user_id, gift_id))`
}

// Gift is a WalletGiftDebited wallet message's payload.
type Gift struct {
	Receiver string `json:"receiver"`
	GiftID   string `json:"gift_id"`
	Count    int64  `json:"count"`
}

// NewWall returns the gift wall projection: WalletGiftDebited messages
// from either producer, deduplicated by the body's event id in the ledger
// table, add their count to table.
func NewWall(s store.Store, table, ledger string, log *slog.Logger) (*projector.Projector, error) {
	upsert := s.Dialect().Rebind("INSERT INTO " + table + " (app_code, user_id, gift_id, total_count) VALUES (?, ?, ?, ?) " +
		"ON CONFLICT (app_code, user_id, gift_id) DO UPDATE SET total_count = " + table + ".total_count + excluded.total_count")
	if s.Dialect().Name == "mysql" {
		upsert = "INSERT INTO " + table + " (app_code, user_id, gift_id, total_count) VALUES (?, ?, ?, ?) " +
			"ON DUPLICATE KEY UPDATE total_count = total_count + VALUES(total_count)"
	}
	apply := func(ctx context.Context, tx *sql.Tx, ev herald.Event) error {
		var m struct{ Payload Gift }
		if err := json.Unmarshal(ev.Payload, &m); err != nil || m.Payload.Receiver == "" || m.Payload.Count < 1 {
			return herald.Permanent(fmt.Errorf("event %s: not a gift: %s", ev.ID, ev.Payload))
		}
		_, err := tx.ExecContext(ctx, upsert, ev.Tenant, m.Payload.Receiver, m.Payload.GiftID, m.Payload.Count)
		return err
	}
	return projector.New(projector.Config{Settings: projector.Settings{Name: "seed_gift_wall", Table: ledger,
		IncludeTypes: []string{WalletGiftDebited}, EventFrom: EventFrom}, Store: s, Handler: apply, Logger: log})
}
