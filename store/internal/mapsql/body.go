package mapsql

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/store"
)

// extraColumns is what a claim reads after recordColumns: the quoted
// columns of the body template's fields, then those of the header
// columns (in their headers' name order).
func (t *Table) extraColumns() string {
	var b strings.Builder
	for _, col := range append(t.m.BodyColumns(), t.m.HeaderColumnNames()...) {
		b.WriteString(", " + t.ts.d.Quote(col))
	}
	return b.String()
}

// addHeaders sets the header columns' values (after the body's in values)
// as headers of ev, over any of the same name from the headers column; a
// NULL sends no header.
func (t *Table) addHeaders(ev *herald.Event, values []any) {
	values = values[len(t.m.BodyColumns()):]
	for i, name := range store.HeaderNames(t.m.HeaderColumns) {
		if values[i] == nil {
			continue
		}
		if ev.Headers == nil {
			ev.Headers = map[string]string{}
		}
		ev.Headers[name] = text(values[i])
	}
}

// numericType says whether a column of this database type name holds
// numbers, which a body carries as JSON numbers.
func numericType(name string) bool {
	name = strings.ToUpper(name)
	for _, n := range []string{"INT", "DECIMAL", "NUMERIC", "FLOAT", "DOUBLE", "REAL"} {
		if strings.Contains(name, n) {
			return true
		}
	}
	return false
}

// numericColumns says, for each body column of rows (after the record's
// columns), whether it holds numbers.
func numericColumns(rows *sql.Rows, first int) ([]bool, error) {
	types, err := rows.ColumnTypes()
	if err != nil {
		return nil, err
	}
	out := make([]bool, len(types)-first)
	for i := range out {
		out[i] = numericType(types[first+i].DatabaseTypeName())
	}
	return out, nil
}

// body builds a row's message body from the template: values are the
// row's body columns in order, numeric says which hold numbers. An error
// names the column and field that cannot be built.
func (t *Table) body(payload []byte, values []any, numeric []bool) ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	col := 0
	for i, f := range t.m.Body {
		if i > 0 {
			b.WriteByte(',')
		}
		name, _ := json.Marshal(f.Field)
		b.Write(name)
		b.WriteByte(':')
		switch {
		case f.Column != "":
			writeValue(&b, values[col], numeric[col])
			col++
		case f.Const != "":
			writeString(&b, f.Const)
		case f.Payload == store.PayloadRaw:
			if !json.Valid(payload) {
				return nil, fmt.Errorf("column %s is not valid JSON, which body[%d] (%s) embeds as JSON",
					t.m.Columns.Payload, i, f.Field)
			}
			b.Write(payload)
		default:
			writeString(&b, string(payload))
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// writeValue writes a column's value: null, a number for a numeric
// column whose text is one, a string otherwise.
func writeValue(b *bytes.Buffer, v any, numeric bool) {
	if v == nil {
		b.WriteString("null")
		return
	}
	s := text(v)
	if numeric && s != "" && json.Valid([]byte(s)) {
		b.WriteString(s)
		return
	}
	writeString(b, s)
}

func writeString(b *bytes.Buffer, s string) {
	q, _ := json.Marshal(s)
	b.Write(q)
}
