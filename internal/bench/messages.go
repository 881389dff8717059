package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/relay"
	"github.com/heraldhq/herald/store/postgres"
)

// checkMessages refuses Setup.Messages where no lane reads logical
// messages: they exist only in PostgreSQL's log.
func (s Setup) checkMessages() error {
	if !s.Messages {
		return nil
	}
	if !isPostgres(s.Store) || s.Source != relay.SourceLog {
		return errors.New("events written as logical messages need a PostgreSQL store and a log lane")
	}
	return nil
}

// isPostgres reports whether st is a PostgreSQL store (logical messages
// exist only in its log).
func isPostgres(st any) bool {
	_, ok := st.(*postgres.Store)
	return ok
}

// emitMessages commits evs as pg_logical_emit_message events (the format
// of docs/loglanes.md), chunk per transaction, each chunk in one statement:
// a producer that writes no outbox row at all.
func (s Setup) emitMessages(ctx context.Context, evs []herald.Event, chunk int) error {
	for start := 0; start < len(evs); start += chunk {
		texts := make([]string, 0, chunk)
		for _, ev := range evs[start:min(len(evs), start+chunk)] {
			text, err := messageText(ev)
			if err != nil {
				return err
			}
			texts = append(texts, text)
		}
		_, err := s.Store.DB().ExecContext(ctx, `SELECT count(pg_logical_emit_message(true, $1, m)) FROM unnest($2::text[]) AS m`,
			postgres.MessagePrefix(s.table()), texts)
		if err != nil {
			return fmt.Errorf("emitting logical messages: %w", err)
		}
	}
	return nil
}

// messageText is ev as a logical message's JSON, its payload as a JSON
// string of the same bytes (bench payloads are printable).
func messageText(ev herald.Event) (string, error) {
	b, err := json.Marshal(struct {
		Topic     string `json:"topic"`
		EventType string `json:"event_type"`
		Payload   string `json:"payload"`
	}{ev.Topic, ev.Type, string(ev.Payload)})
	return string(b), err
}
