package binlog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/loglane"
	"github.com/heraldhq/herald/store/internal/sqlbuild"
)

// position is a place in the binary log: a file and an offset in it.
type position struct {
	file   string
	offset uint32
}

// encode is the position as one number that grows along the log (the
// file's index above the offset), for store.LogBatch.End.
func (p position) encode() uint64 {
	return uint64(fileIndex(p.file))<<32 | uint64(p.offset)
}

// base is the name of p's file series: binlog for binlog.000042.
func (p position) base() string {
	if dot := strings.LastIndexByte(p.file, '.'); dot >= 0 {
		return p.file[:dot]
	}
	return p.file
}

// decode is the position of file series base at end (an encoded position).
func decode(base string, end uint64) position {
	return position{file: fmt.Sprintf("%s.%06d", base, end>>32), offset: uint32(end)}
}

func (p position) String() string { return p.file + ":" + strconv.FormatUint(uint64(p.offset), 10) }

// fileIndex is the number a binary log file's name ends with
// (binlog.000042 → 42).
func fileIndex(file string) uint32 {
	n, _ := strconv.ParseUint(file[strings.LastIndexByte(file, '.')+1:], 10, 32)
	return uint32(n)
}

// takeLease makes the lane's row (first time) and takes its lease if it is
// free, expired or ours; it returns the recorded position (file "" before
// the first start).
func (s *Store) takeLease(ctx context.Context, p store.LogParams) (position, error) {
	var pos position
	if _, err := s.DB().ExecContext(ctx, `INSERT IGNORE INTO herald_log_lanes (lane, table_name) VALUES (?, ?)`, p.Lane, p.Table); err != nil {
		return pos, fmt.Errorf("mysql store: log lane %s: %w", p.Lane, err)
	}
	res, err := s.DB().ExecContext(ctx, `UPDATE herald_log_lanes SET owner = ?,
  lease_until = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND
WHERE lane = ? AND (owner = ? OR owner = '' OR lease_until < UTC_TIMESTAMP(6))`,
		p.Owner, sqlbuild.Micros(p.Lease), p.Lane, p.Owner)
	if err != nil {
		return pos, fmt.Errorf("mysql store: log lane %s: lease: %w", p.Lane, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return pos, store.ErrLogLeaseHeld
	}
	var off int64
	err = s.DB().QueryRowContext(ctx, `SELECT log_file, position & 0xffffffff FROM herald_log_lanes WHERE lane = ?`, p.Lane).
		Scan(&pos.file, &off)
	if errors.Is(err, sql.ErrNoRows) {
		return pos, store.ErrLogLeaseHeld // deleted meanwhile (recovery): try again
	}
	pos.offset = uint32(off)
	return pos, err
}

// renewLeaseIn extends the lease and records pos, if the lease is still
// ours; a position never moves back. MySQL applies SET assignments left to
// right, so log_file is compared with the position before it moves.
func renewLeaseIn(ctx context.Context, db loglane.Execer, p store.LogParams, pos position) error {
	enc := int64(pos.encode())
	res, err := db.ExecContext(ctx, `UPDATE herald_log_lanes SET log_file = IF(? > position, ?, log_file),
  position = GREATEST(position, ?), updated_at = UTC_TIMESTAMP(6),
  lease_until = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND
WHERE lane = ? AND owner = ? AND lease_until >= UTC_TIMESTAMP(6)`,
		enc, pos.file, enc, sqlbuild.Micros(p.Lease), p.Lane, p.Owner)
	if err != nil {
		return fmt.Errorf("mysql store: log lane %s: position: %w", p.Lane, err)
	}
	// RowsAffected counts changed rows: an update within the same
	// microsecond changes lease_until all the same, as it moves forward.
	if n, _ := res.RowsAffected(); n == 0 {
		return store.ErrLogLeaseLost
	}
	return nil
}

// currentPosition is the end of the server's binary log now.
func (s *Store) currentPosition(ctx context.Context) (position, error) {
	var pos position
	rows, err := s.DB().QueryContext(ctx, "SHOW MASTER STATUS")
	if err != nil {
		return pos, fmt.Errorf("mysql store: SHOW MASTER STATUS: %w", err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	if !rows.Next() {
		return pos, fmt.Errorf("%w: SHOW MASTER STATUS returned nothing: the binary log is off", store.ErrLogUnavailable)
	}
	vals := make([]any, len(cols))
	vals[0], vals[1] = &pos.file, &pos.offset
	for i := 2; i < len(vals); i++ {
		vals[i] = new(sql.RawBytes)
	}
	if err := rows.Scan(vals...); err != nil {
		return pos, err
	}
	return pos, rows.Err()
}
