package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgtype"

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

// mappedRecord reads a mapped table's row from its tuple, each column
// through pgx's codec for its type.
func (d *decoder) mappedRecord(rel *pglogrepl.RelationMessage, tuple []tupleColumn) store.Record {
	row := map[string]any{}
	var errs []error
	for i, col := range rel.Columns {
		if i >= len(tuple) {
			break
		}
		c := tuple[i]
		if c.kind == pglogrepl.TupleDataTypeNull || c.kind == pglogrepl.TupleDataTypeToast {
			continue
		}
		v, err := d.value(col.DataType, c)
		if err != nil {
			errs = append(errs, fmt.Errorf("column %s: %w", col.Name, err))
			continue
		}
		row[strings.ToLower(col.Name)] = v
	}
	rec := d.mapped.Record(row)
	if err := errors.Join(errs...); err != nil && rec.BodyErr == nil {
		rec.BodyErr = fmt.Errorf("the row as decoded from the log: %w", err)
	}
	loglane.FinishRecord(&rec)
	return rec
}

// value decodes one column: an integer, a time, or text (numerics through
// their driver value, which is their text).
func (d *decoder) value(oid uint32, c tupleColumn) (any, error) {
	switch {
	case oid == pgtype.JSONOID:
		return string(c.data), nil // its binary format is its text
	case oid == pgtype.JSONBOID && c.kind == pglogrepl.TupleDataTypeBinary:
		if len(c.data) == 0 || c.data[0] != 1 {
			return nil, fmt.Errorf("jsonb of an unknown binary version")
		}
		return string(c.data[1:]), nil // a version byte, then the text
	case oid == pgtype.JSONBOID:
		return string(c.data), nil
	}
	typ, ok := d.types.TypeForOID(oid)
	if !ok {
		if c.kind == pglogrepl.TupleDataTypeBinary {
			return nil, fmt.Errorf("type %d is unknown and came in binary", oid)
		}
		return string(c.data), nil
	}
	format := int16(pgtype.TextFormatCode)
	if c.kind == pglogrepl.TupleDataTypeBinary {
		format = pgtype.BinaryFormatCode
	}
	v, err := typ.Codec.DecodeValue(d.types, oid, format, c.data)
	if dv, ok := v.(driver.Valuer); ok && err == nil {
		v, err = dv.Value()
	}
	return v, err
}

// handOverMapped hands failed events of a mapped table over in one
// transaction.
func (s *Store) handOverMapped(ctx context.Context, t *mapsql.Table, fs []store.LogFailure) error {
	return s.inTx(ctx, func(tx *sql.Tx) error { return t.HandOverLogged(ctx, tx, fs) })
}

// record writes a recorded batch's marks: the journal on Herald's own
// table, the mapped status column's on a mapped one.
func (st *logStream) record(ctx context.Context, tx *sql.Tx, ds []store.Delivery) error {
	if t := st.s.mapped.Get(st.p.Table); t != nil {
		return t.MarkLogged(ctx, tx, ds, st.p.LeaveDelivered)
	}
	return journalMarks(ctx, tx, st.p, st.dec.relid, ds)
}

// handOverBacklog gives the lane's polling workers the rows committed
// before its slot.
func (st *logStream) handOverBacklog(ctx context.Context) (int64, error) {
	if t := st.s.mapped.Get(st.p.Table); t != nil {
		return t.HandOverBacklog(ctx, st.p.Scope)
	}
	return st.s.logs.HandOverBacklog(ctx, st.p, st.table)
}
