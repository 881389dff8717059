package postgres

import (
	"encoding/binary"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	gojson "github.com/goccy/go-json"
	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/heraldhq/herald/store"
)

// outboxRelation is the Relation message of an outbox table as pgoutput
// sends it: the columns of outbox_0001_create.sql with their type OIDs.
func outboxRelation() *pglogrepl.RelationMessage {
	rel := &pglogrepl.RelationMessage{RelationID: 16400, Namespace: "public", RelationName: "herald_outbox"}
	for _, c := range []struct {
		name string
		oid  uint32
	}{{"id", pgtype.Int8OID}, {"event_id", pgtype.TextOID}, {"tenant", pgtype.TextOID}, {"topic", pgtype.TextOID},
		{"event_type", pgtype.TextOID}, {"partition_key", pgtype.TextOID}, {"headers", pgtype.TextOID},
		{"payload", pgtype.ByteaOID}, {"status", pgtype.TextOID}, {"attempts", pgtype.Int4OID},
		{"last_error", pgtype.TextOID}, {"lease_owner", pgtype.TextOID}, {"lease_token", pgtype.Int8OID},
		{"receipt", pgtype.TextOID}, {"created_at", pgtype.TimestamptzOID}, {"available_at", pgtype.TimestamptzOID},
		{"delivered_at", pgtype.TimestamptzOID}} {
		rel.Columns = append(rel.Columns, &pglogrepl.RelationMessageColumn{Name: c.name, DataType: c.oid})
	}
	rel.ColumnNum = uint16(len(rel.Columns))
	return rel
}

// insertWAL is the binary Insert message of an outbox row with a payload
// of size bytes (nil columns are sent as nulls).
func insertWAL(relID uint32, id int64, size int) []byte {
	i8 := func(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }
	at := i8(time.Date(2026, 12, 3, 7, 0, 0, 0, time.UTC).Sub(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)).Microseconds())
	cols := [][]byte{i8(id), []byte("7c9e6679-7425-40de-944b-e07fc1f90ae7"), nil, []byte("gifts"), []byte("GiftSent"),
		[]byte("room-7"), []byte(`{"trace":"t1"}`), []byte(strings.Repeat("x", size)), []byte("pending  "),
		{0, 0, 0, 0}, {}, {}, i8(0), nil, at, at, nil}
	wal := binary.BigEndian.AppendUint32([]byte{'I'}, relID)
	wal = binary.BigEndian.AppendUint16(append(wal, 'N'), uint16(len(cols)))
	for _, c := range cols {
		if c == nil {
			wal = append(wal, 'n')
			continue
		}
		wal = binary.BigEndian.AppendUint32(append(wal, 'b'), uint32(len(c)))
		wal = append(wal, c...)
	}
	return wal
}

func testDecoder() *decoder {
	rel := outboxRelation()
	return &decoder{relid: rel.RelationID, prefix: MessagePrefix(rel.RelationName),
		rels: map[uint32]*pglogrepl.RelationMessage{rel.RelationID: rel}, types: pgtype.NewMap()}
}

// Rule: the relay's own Insert decoder reads a row exactly as pglogrepl's
// does, and leaves a message it cannot read (cut short, or not an insert)
// to pglogrepl.
func TestInsertDecoderMatchesPglogrepl(t *testing.T) {
	d := testDecoder()
	wal := insertWAL(16400, 42, 1024)
	got, inScope, handled := d.insert(wal, store.Scope{})
	if !handled || !inScope {
		t.Fatalf("insert handled=%v inScope=%v, want both", handled, inScope)
	}
	m, err := pglogrepl.Parse(wal)
	if err != nil {
		t.Fatal(err)
	}
	want, ok := d.event(m, store.Scope{})
	got.Age, want.Age = 0, 0 // FinishLogRecord's clock
	if !ok || !reflect.DeepEqual(got, want) {
		got.Event.Payload, want.Event.Payload = got.Event.Payload[:8], want.Event.Payload[:8]
		t.Fatalf("insert decoded\n%+v\npglogrepl\n%+v", got, want)
	}
	if got.ID != 42 || got.Event.Topic != "gifts" || len(got.Event.Payload) != 1024 || got.Event.Headers["trace"] != "t1" ||
		got.HeadersErr != nil {
		t.Fatalf("decoded record = %+v", got)
	}
	wal[len(wal)-1] = 'Z' // the copy must not alias the message's buffer
	if got.Event.Payload[1023] != 'x' {
		t.Fatal("the decoded payload points into the replication message")
	}
	for _, bad := range [][]byte{wal[:len(wal)-300], wal[:7], {'B', 0, 0, 0, 0, 0, 0, 0, 0}} {
		if _, _, handled := d.insert(bad, store.Scope{}); handled {
			t.Fatalf("insert handled %q, want it left to pglogrepl", bad[:min(len(bad), 8)])
		}
	}
	if _, inScope, handled := d.insert(insertWAL(999, 1, 10), store.Scope{}); !handled || inScope {
		t.Fatalf("an insert into another table: handled=%v inScope=%v, want handled and skipped", handled, inScope)
	}
}

// BenchmarkDecodeInsert: the CPU of turning one binary Insert of a 1 KiB
// row into a record, by the relay's decoder and by pglogrepl's.
func BenchmarkDecodeInsert(b *testing.B) {
	wal := insertWAL(16400, 42, 1024)
	b.Run("own", func(b *testing.B) {
		d := testDecoder()
		b.ReportAllocs()
		for b.Loop() {
			if _, ok, _ := d.insert(wal, store.Scope{}); !ok {
				b.Fatal("not decoded")
			}
		}
	})
	b.Run("pglogrepl", func(b *testing.B) {
		d := testDecoder()
		b.ReportAllocs()
		for b.Loop() {
			m, err := pglogrepl.Parse(wal)
			if err != nil {
				b.Fatal(err)
			}
			if _, ok := d.event(m, store.Scope{}); !ok {
				b.Fatal("not decoded")
			}
		}
	})
}

// messageWAL is a transactional logical message with the prefix and a
// JSON event whose payload is a string of size bytes.
func messageWAL(prefix string, size int) []byte {
	content := `{"topic":"gifts","event_type":"GiftSent","partition_key":"room-7","headers":{"trace":"t1"},"payload":"` +
		strings.Repeat("x", size) + `"}`
	wal := binary.BigEndian.AppendUint64([]byte{'M', 1}, 0x16B3748)
	wal = append(append(wal, prefix...), 0)
	wal = binary.BigEndian.AppendUint32(wal, uint32(len(content)))
	return append(wal, content...)
}

// BenchmarkDecodeMessage: the CPU of turning one logical message with a
// 1 KiB payload into a record, and, side by side, of its JSON alone read by
// goccy/go-json (what messageRecord uses) and by encoding/json.
func BenchmarkDecodeMessage(b *testing.B) {
	d := testDecoder()
	wal := messageWAL(d.prefix, 1024)
	b.Run("record", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m, err := pglogrepl.Parse(wal)
			if err != nil {
				b.Fatal(err)
			}
			if rec, ok := d.event(m, store.Scope{}); !ok || rec.HeadersErr != nil {
				b.Fatalf("not decoded: %v", rec.HeadersErr)
			}
		}
	})
	m, err := pglogrepl.Parse(wal)
	if err != nil {
		b.Fatal(err)
	}
	content := m.(*pglogrepl.LogicalDecodingMessage).Content
	for _, dec := range []struct {
		name      string
		unmarshal func([]byte, any) error
	}{{"json-goccy", gojson.Unmarshal}, {"json-std", json.Unmarshal}} {
		b.Run(dec.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var lm logMessage
				if err := dec.unmarshal(content, &lm); err != nil || lm.Topic == "" {
					b.Fatalf("not decoded: %v", err)
				}
			}
		})
	}
}

// Rule: a logical message's JSON is read as docs/loglanes.md describes
// (a JSON payload kept byte for byte, payload_base64 decoded, unknown
// fields ignored), and one that is not valid becomes a record the relay
// kills, naming why, with its text as the payload.
func TestMessageRecord(t *testing.T) {
	for _, c := range []struct {
		content, payload, bad string
		headers               map[string]string
	}{
		{content: `{"topic":"t","event_type":"T","payload": {"a": [1, 2]} ,"x":1}`, payload: `{"a": [1, 2]}`},
		{content: `{"topic":"t","event_type":"T","payload_base64":"AAE=","headers":{"h":"v"}}`, payload: "\x00\x01",
			headers: map[string]string{"h": "v"}},
		{content: `{"topic":"t","event_type":"T","payload":"a\"b"}`, payload: `"a\"b"`},
		{content: `{"topic":"t","event_type":"T","payload":{"a":1}`, bad: "not a JSON object"},
		{content: `{"topic":"t","event_type":"T","payload":1} x`, bad: "not a JSON object"},
		{content: `[1]`, bad: "not a JSON object"},
		{content: `{"topic":"t","event_type":"T","headers":{"h":1}}`, bad: "not a JSON object"},
		{content: `{"topic":"t","event_type":"T","payload_base64":"!"}`, bad: "not a JSON object"},
		{content: `{"event_type":"T"}`, bad: "topic and event_type are required"},
		{content: `{"topic":"t","event_type":"T","payload":1,"payload_base64":"AA=="}`, bad: "both set"},
	} {
		content := []byte(c.content)
		rec := messageRecord(&pglogrepl.LogicalDecodingMessage{Transactional: true, Prefix: "p", Content: content})
		// The content points into the replication message, which the next
		// receive overwrites: the record must not.
		for i := range content {
			content[i] = '#'
		}
		switch {
		case c.bad != "" && (rec.HeadersErr == nil || !strings.Contains(rec.HeadersErr.Error(), c.bad) ||
			string(rec.Event.Payload) != c.content):
			t.Errorf("%s: HeadersErr %v payload %q, want an error containing %q and the text as payload", c.content,
				rec.HeadersErr, rec.Event.Payload, c.bad)
		case c.bad == "" && (rec.HeadersErr != nil || string(rec.Event.Payload) != c.payload ||
			!reflect.DeepEqual(rec.Event.Headers, c.headers) || rec.Event.Topic != "t"):
			t.Errorf("%s: payload %q headers %v err %v, want %q %v", c.content, rec.Event.Payload, rec.Event.Headers,
				rec.HeadersErr, c.payload, c.headers)
		}
	}
}
