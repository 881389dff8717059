package mapsql

import (
	"strings"
	"testing"

	"github.com/heraldhq/herald/store"
)

// Rule: a body template writes its fields in order, a numeric column's
// value as a JSON number (unless its text is not one), NULL as null,
// other values and constants as strings, and the payload embedded as JSON
// or as a string; a payload that is not JSON for a raw field is an error
// naming the column and the field.
func TestBodyTemplate(t *testing.T) {
	tb := &Table{m: store.Mapping{Columns: store.Columns{Payload: "payload_json"}, Body: []store.BodyField{
		{Field: "id", Column: "event_id"}, {Field: "user", Column: "user_id"}, {Field: "odd", Column: "amount"},
		{Field: "none", Column: "note"}, {Field: "src", Const: `wal"let`}, {Field: "data", Payload: store.PayloadRaw},
		{Field: "text", Payload: store.PayloadString},
	}}}
	values := []any{[]byte("ev-1"), int64(1003), []byte("12abc"), nil}
	numeric := []bool{false, true, true, false}
	got, err := tb.body([]byte(`{"a":1}`), values, numeric)
	want := `{"id":"ev-1","user":1003,"odd":"12abc","none":null,"src":"wal\"let","data":{"a":1},"text":"{\"a\":1}"}`
	if err != nil || string(got) != want {
		t.Fatalf("body = %s, %v\nwant   %s", got, err, want)
	}
	if _, err := tb.body([]byte(`{broken`), values, numeric); err == nil ||
		!strings.Contains(err.Error(), "column payload_json is not valid JSON, which body[5] (data) embeds as JSON") {
		t.Fatalf("broken payload: %v", err)
	}
}
