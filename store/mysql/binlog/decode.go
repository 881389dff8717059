package binlog

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	vtmysql "vitess.io/vitess/go/mysql"
	vtbinlog "vitess.io/vitess/go/mysql/binlog"
	querypb "vitess.io/vitess/go/vt/proto/query"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/loglane"
	"github.com/heraldhq/herald/store/internal/sqlscan"
)

// columns lists table's column names in table order: the binlog's row
// images carry values by position, not name.
func (s *Store) columns(ctx context.Context, table string) ([]string, error) {
	cols, err := sqlscan.QueryStrings(ctx, s.DB(), `SELECT COLUMN_NAME FROM information_schema.COLUMNS
WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`, table)
	if err == nil && len(cols) == 0 {
		err = fmt.Errorf("no such table (run herald migrate)")
	}
	if err != nil {
		return nil, fmt.Errorf("mysql store: columns of %s: %w", table, err)
	}
	return cols, nil
}

// fieldType tells vitess how to read a column's value: signed integers, raw
// bytes for the payload, text for the rest.
func fieldType(col string) *querypb.Field {
	switch col {
	case "id", "attempts", "lease_token":
		return &querypb.Field{Type: querypb.Type_INT64}
	case "payload":
		return &querypb.Field{Type: querypb.Type_BLOB}
	}
	return &querypb.Field{Type: querypb.Type_VARCHAR}
}

// rowRecord reads row i of an insert into the lane's table.
func (st *logStream) rowRecord(tm *vtmysql.TableMap, rows *vtmysql.Rows, i int) store.Record {
	rec := store.Record{Status: store.StatusPending, Attempts: 1}
	var headers string
	errs := st.cells(tm, rows, i, fieldType, func(name string, raw []byte) error {
		return setColumn(&rec, &headers, name, raw)
	})
	rec.Event.Headers, rec.HeadersErr = sqlscan.DecodeHeaders(headers)
	if err := errors.Join(errs...); err != nil {
		rec.HeadersErr = fmt.Errorf("the row as decoded from the binary log: %w", err)
	}
	loglane.FinishRecord(&rec)
	return rec
}

// cells decodes row i's values in column order, typed by field, and hands
// each one not NULL to set with its column's name.
func (st *logStream) cells(tm *vtmysql.TableMap, rows *vtmysql.Rows, i int,
	field func(name string) *querypb.Field, set func(name string, raw []byte) error) []error {
	row := rows.Rows[i]
	var errs []error
	pos, value := 0, 0
	for c := 0; c < rows.DataColumns.Count(); c++ {
		if !rows.DataColumns.Bit(c) {
			continue
		}
		name := ""
		if c < len(st.cols) {
			name = st.cols[c]
		}
		null := row.NullColumns.Bit(value)
		value++
		if null {
			continue
		}
		v, n, err := vtbinlog.CellValue(row.Data, pos, tm.Types[c], tm.Metadata[c], field(name), false)
		if err != nil {
			errs = append(errs, fmt.Errorf("column %d (%s): %w", c, name, err))
			break // the rest of the row cannot be found
		}
		pos += n
		if err := set(name, v.Raw()); err != nil {
			errs = append(errs, fmt.Errorf("column %s: %w", name, err))
		}
	}
	return errs
}

// setColumn stores one column's value in rec.
func setColumn(rec *store.Record, headers *string, name string, raw []byte) error {
	var err error
	switch name {
	case "id":
		rec.ID, err = strconv.ParseInt(string(raw), 10, 64)
	case "event_id":
		rec.Event.ID = string(raw)
	case "tenant":
		rec.Event.Tenant = string(raw)
	case "topic":
		rec.Event.Topic = string(raw)
	case "event_type":
		rec.Event.Type = string(raw)
	case "partition_key":
		rec.Event.PartitionKey = string(raw)
	case "headers":
		*headers = string(raw)
	case "payload":
		rec.Event.Payload = append([]byte{}, raw...)
	case "created_at":
		rec.Event.CreatedAt, err = parseDatetime(raw)
	case "available_at":
		rec.AvailableAt, err = parseDatetime(raw)
	}
	return err
}

// parseDatetime reads a DATETIME(6) as vitess prints it; the store keeps
// UTC.
func parseDatetime(raw []byte) (time.Time, error) {
	return time.Parse("2006-01-02 15:04:05.999999", string(raw))
}

// inScope applies the lane's tenant and type filters, as a claim would.
func inScope(rec store.Record, sc store.Scope) bool { return loglane.InScope(rec.Event, sc) }
