package seedwallet

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	rmq "github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"

	"github.com/heraldhq/herald"
)

// Row is one wallet_outbox row as the old worker reads it.
type Row struct {
	AppCode, EventID, EventType, TransactionID, CommandID string
	UserID                                                int64
	AssetType                                             string
	AvailableDelta, FrozenDelta                           int64
	Payload                                               []byte // payload_json as stored
}

// Message is the wallet message the old worker publishes for r: the row's
// fields, the constant source, and payload_json embedded as stored. The
// lane's Body template produces the same bytes.
func Message(r Row) []byte {
	head, _ := json.Marshal(struct {
		EventID        string `json:"eventId"`
		EventType      string `json:"eventType"`
		AppCode        string `json:"appCode"`
		TransactionID  string `json:"transactionId"`
		CommandID      string `json:"commandId"`
		UserID         int64  `json:"userId"`
		AssetType      string `json:"assetType"`
		AvailableDelta int64  `json:"availableDelta"`
		FrozenDelta    int64  `json:"frozenDelta"`
		Source         string `json:"source"`
	}{r.EventID, r.EventType, r.AppCode, r.TransactionID, r.CommandID, r.UserID, r.AssetType, r.AvailableDelta,
		r.FrozenDelta, Source})
	out := append(head[:len(head)-1], `,"payload":`...)
	out = append(out, r.Payload...)
	return append(out, '}')
}

// OldWorker stands in for the wallet service's own outbox worker: it
// publishes rows with the RocketMQ client directly, no CloudEvents
// properties, tag and keys as that worker sets them. It reads rows without
// claiming them, so run it while Herald is not running on the table (the
// relay's TestAdoptSharedWithOldWorker runs a claiming worker beside
// Herald).
type OldWorker struct {
	db      *sql.DB
	dialect herald.Dialect
	table   string
	tag     string
	prod    rmq.Producer
}

// StartOldWorker starts a worker on table publishing to Topic on the name
// servers; tag is its constant tag, or "" to tag each message with its
// event type. Close it when done.
func StartOldWorker(db *sql.DB, dialect herald.Dialect, table string, nameServers []string, tag string) (*OldWorker, error) {
	prod, err := rmq.NewProducer(producer.WithNameServer(nameServers), producer.WithGroupName("wallet_old_worker"),
		producer.WithInstanceName("old-worker-"+herald.NewID()), producer.WithRetry(0))
	if err != nil {
		return nil, err
	}
	if err := prod.Start(); err != nil {
		return nil, err
	}
	return &OldWorker{db: db, dialect: dialect, table: table, tag: tag, prod: prod}, nil
}

// Close shuts the worker's producer down.
func (w *OldWorker) Close() error { return w.prod.Shutdown() }

// Publish publishes the n oldest pending rows, one message each. With
// mark it then marks them delivered, as the worker does; without, it
// stops as a worker that crashed between publishing and marking would, so
// the rows stay pending and are published again by whoever claims them
// next. It returns the event ids published.
func (w *OldWorker) Publish(ctx context.Context, n int, mark bool) ([]string, error) {
	rows, err := w.pending(ctx, n)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(rows))
	for _, r := range rows {
		tag := w.tag
		if tag == "" {
			tag = r.EventType
		}
		msg := primitive.NewMessage(Topic, Message(r)).WithTag(tag).WithKeys([]string{r.EventID, r.TransactionID, r.CommandID})
		if _, err := w.prod.SendSync(ctx, msg); err != nil {
			return ids, fmt.Errorf("old worker: send %s: %w", r.EventID, err)
		}
		ids = append(ids, r.EventID)
		if !mark {
			continue
		}
		if _, err := w.db.ExecContext(ctx, w.dialect.Rebind("UPDATE "+w.table+" SET status = 'delivered' WHERE event_id = ?"),
			r.EventID); err != nil {
			return ids, err
		}
	}
	return ids, nil
}

// pending reads the n oldest pending rows.
func (w *OldWorker) pending(ctx context.Context, n int) ([]Row, error) {
	rs, err := w.db.QueryContext(ctx, w.dialect.Rebind(`SELECT app_code, event_id, event_type, transaction_id, command_id,
  user_id, asset_type, available_delta, frozen_delta, payload_json FROM `+w.table+`
WHERE status = 'pending' ORDER BY created_at_ms, event_id LIMIT ?`), n)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []Row
	for rs.Next() {
		var r Row
		if err := rs.Scan(&r.AppCode, &r.EventID, &r.EventType, &r.TransactionID, &r.CommandID, &r.UserID, &r.AssetType,
			&r.AvailableDelta, &r.FrozenDelta, &r.Payload); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rs.Err()
}
