package postgres

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pglogrepl"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/sqlcommon"
)

// decoder turns pgoutput messages into the lane's records.
type decoder struct {
	table  string
	prefix string
	rels   map[uint32]*pglogrepl.RelationMessage
}

// event returns the record of an INSERT into the lane's table or of a
// logical message with the table's prefix, if it is in scope.
func (d *decoder) event(m pglogrepl.Message, sc store.Scope) (store.Record, bool) {
	var rec store.Record
	switch m := m.(type) {
	case *pglogrepl.RelationMessage:
		d.rels[m.RelationID] = m
		return rec, false
	case *pglogrepl.InsertMessage:
		rel := d.rels[m.RelationID]
		if rel == nil || rel.RelationName != d.table {
			return rec, false
		}
		rec = rowRecord(rel, m.Tuple)
	case *pglogrepl.LogicalDecodingMessage:
		if !m.Transactional || m.Prefix != d.prefix {
			return rec, false
		}
		rec = messageRecord(m)
	default:
		return rec, false
	}
	return rec, sqlcommon.LogInScope(rec.Event, sc)
}

// rowRecord reads an outbox row from its text-format tuple.
func rowRecord(rel *pglogrepl.RelationMessage, tuple *pglogrepl.TupleData) store.Record {
	rec := store.Record{Status: store.StatusPending, Attempts: 1}
	var headers string
	var errs []error
	for i, col := range rel.Columns {
		if tuple == nil || i >= len(tuple.Columns) {
			break
		}
		v := string(tuple.Columns[i].Data)
		var err error
		switch col.Name {
		case "id":
			rec.ID, err = strconv.ParseInt(v, 10, 64)
		case "event_id":
			rec.Event.ID = v
		case "tenant":
			rec.Event.Tenant = v
		case "topic":
			rec.Event.Topic = v
		case "event_type":
			rec.Event.Type = v
		case "partition_key":
			rec.Event.PartitionKey = v
		case "headers":
			headers = v
		case "payload":
			rec.Event.Payload, err = hex.DecodeString(strings.TrimPrefix(v, `\x`))
		case "created_at":
			rec.Event.CreatedAt, err = parseTimestamptz(v)
		case "available_at":
			rec.AvailableAt, err = parseTimestamptz(v)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("column %s: %w", col.Name, err))
		}
	}
	rec.Event.Headers, rec.HeadersErr = sqlcommon.DecodeHeaders(headers)
	if err := errors.Join(errs...); err != nil {
		rec.HeadersErr = fmt.Errorf("the row as decoded from the log: %w", err)
	}
	sqlcommon.FinishLogRecord(&rec)
	return rec
}

// parseTimestamptz reads timestamptz text in PostgreSQL's default ISO style.
func parseTimestamptz(v string) (time.Time, error) {
	for _, layout := range []string{"2006-01-02 15:04:05.999999-07", "2006-01-02 15:04:05.999999-07:00", "2006-01-02 15:04:05.999999-07:00:00"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not an ISO timestamp (DateStyle must be ISO)", v)
}

// logMessage is the JSON payload of a pg_logical_emit_message event
// (docs/loglanes.md).
type logMessage struct {
	EventID       string            `json:"event_id"`
	Topic         string            `json:"topic"`
	EventType     string            `json:"event_type"`
	PartitionKey  string            `json:"partition_key"`
	Tenant        string            `json:"tenant"`
	Headers       map[string]string `json:"headers"`
	Payload       json.RawMessage   `json:"payload"`
	PayloadBase64 []byte            `json:"payload_base64"` // standard base64, as encoding/json reads []byte
}

// messageRecord reads a logical message; one that is not valid keeps its
// text as the payload and says why in HeadersErr, which makes the relay
// kill it (a dead row an operator can read), never skip it.
func messageRecord(m *pglogrepl.LogicalDecodingMessage) store.Record {
	rec := store.Record{Status: store.StatusPending, Attempts: 1}
	rec.Event.ID = "lsn-" + m.LSN.String()
	var lm logMessage
	err := json.Unmarshal(m.Content, &lm)
	switch {
	case err != nil:
		err = fmt.Errorf("not a JSON object: %w", err)
	case lm.Topic == "" || lm.EventType == "":
		err = errors.New("topic and event_type are required")
	case len(lm.Payload) > 0 && len(lm.PayloadBase64) > 0:
		err = errors.New("payload and payload_base64 are both set")
	}
	if err != nil {
		rec.Event.Payload = m.Content
		rec.HeadersErr = fmt.Errorf("logical message at %s: %w", m.LSN, err)
		sqlcommon.FinishLogRecord(&rec)
		return rec
	}
	if lm.EventID != "" {
		rec.Event.ID = lm.EventID
	}
	rec.Event.Topic, rec.Event.Type, rec.Event.PartitionKey, rec.Event.Tenant = lm.Topic, lm.EventType, lm.PartitionKey, lm.Tenant
	rec.Event.Headers = lm.Headers
	rec.Event.Payload = lm.PayloadBase64
	if len(lm.Payload) > 0 {
		rec.Event.Payload = []byte(lm.Payload)
	}
	sqlcommon.FinishLogRecord(&rec)
	return rec
}
