package binlog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	vtmysql "vitess.io/vitess/go/mysql"
	querypb "vitess.io/vitess/go/vt/proto/query"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/loglane"
	"github.com/heraldhq/herald/store/internal/mapsql"
)

// A log lane on a mapped table (docs/adopt.md) reads the service's rows by
// their mapped columns, marks them in their own status column in the
// position's transaction (no journal: a mapped table has no row id for
// one), and hands failed events over in the retry status (mapsql's
// logrows.go). There is no stray check: a row a mapped lane did not settle
// stays in the first pending value, which the service's own worker, or a
// switch of the lane to polling, relays.

// mappedRecord reads row i of an insert into a mapped table.
func (st *logStream) mappedRecord(tm *vtmysql.TableMap, rows *vtmysql.Rows, i int) store.Record {
	row := map[string]any{}
	errs := st.cells(tm, rows, i, st.mappedField, func(name string, raw []byte) error {
		row[strings.ToLower(name)] = st.mappedValue(name, raw)
		return nil
	})
	rec := st.mapped.Record(row)
	if err := errors.Join(errs...); err != nil && rec.BodyErr == nil {
		rec.BodyErr = fmt.Errorf("the row as decoded from the binary log: %w", err)
	}
	loglane.FinishRecord(&rec)
	return rec
}

// mappedField reads integer columns as signed integers, the rest as text.
func (st *logStream) mappedField(name string) *querypb.Field {
	if st.mapped.IsInteger(name) {
		return &querypb.Field{Type: querypb.Type_INT64}
	}
	return &querypb.Field{Type: querypb.Type_VARCHAR}
}

// mappedValue is a column's value for mapsql: a datetime as a time (the
// store keeps UTC), anything else as its text.
func (st *logStream) mappedValue(name string, raw []byte) any {
	if st.mapped.IsDatetime(name) {
		if t, err := parseDatetime(raw); err == nil {
			return t
		}
	}
	return string(raw)
}

// handOverMapped hands failed events of a mapped table over in one
// transaction.
func (s *Store) handOverMapped(ctx context.Context, t *mapsql.Table, fs []store.LogFailure) error {
	return s.inTx(ctx, func(tx *sql.Tx) error { return t.HandOverLogged(ctx, tx, fs) })
}

// record writes a recorded batch's marks: the journal on Herald's own
// table, the mapped status column's on a mapped one.
func (st *logStream) record(ctx context.Context, tx *sql.Tx, ds []store.Delivery) error {
	if t := st.s.Mapped(st.p.Table); t != nil {
		return t.MarkLogged(ctx, tx, ds, st.p.LeaveDelivered)
	}
	return journalMarks(ctx, tx, st.p, ds)
}
