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

// recorded is what herald_log_lanes holds of a lane's place in the log.
type recorded struct {
	pos position // file "" before the first start (or after a failover, until a batch is recorded)
	// server is the @@server_id whose binary log pos belongs to (0:
	// recorded before GTIDs were kept), gtid the GTID position at pos.
	server int64
	gtid   string
}

// takeLease makes the lane's row (first time) and takes its lease if it is
// free, expired or ours; it returns what the row records.
func (s *Store) takeLease(ctx context.Context, p store.LogParams) (recorded, error) {
	var rec recorded
	pos := &rec.pos
	if _, err := s.DB().ExecContext(ctx, `INSERT IGNORE INTO herald_log_lanes (lane, table_name) VALUES (?, ?)`, p.Lane, p.Table); err != nil {
		return rec, fmt.Errorf("mysql store: log lane %s: %w", p.Lane, err)
	}
	res, err := s.DB().ExecContext(ctx, `UPDATE herald_log_lanes SET owner = ?,
  lease_until = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND
WHERE lane = ? AND (owner = ? OR owner = '' OR lease_until < UTC_TIMESTAMP(6))`,
		p.Owner, sqlbuild.Micros(p.Lease), p.Lane, p.Owner)
	if err != nil {
		return rec, fmt.Errorf("mysql store: log lane %s: lease: %w", p.Lane, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return rec, store.ErrLogLeaseHeld
	}
	var off int64
	err = s.DB().QueryRowContext(ctx, `SELECT log_file, position & 0xffffffff, server_id, gtid_pos FROM herald_log_lanes WHERE lane = ?`, p.Lane).
		Scan(&pos.file, &off, &rec.server, &rec.gtid)
	if errors.Is(err, sql.ErrNoRows) {
		return rec, store.ErrLogLeaseHeld // deleted meanwhile (recovery): try again
	}
	pos.offset = uint32(off)
	return rec, err
}

// renewLeaseIn extends the lease and records pos of server, with gtid the
// GTID position there ("" if unknown: the one recorded before stays, an
// earlier place, which resumes with duplicates, never a gap; a lane recorded
// before GTIDs were kept gets one at its first write), if the lease
// is still ours; a position never moves back. MySQL applies SET
// assignments left to right, so log_file and gtid_pos are compared with
// the position before it moves.
func renewLeaseIn(ctx context.Context, db loglane.Execer, p store.LogParams, pos position, server int64, gtid string) error {
	enc := int64(pos.encode())
	res, err := db.ExecContext(ctx, `UPDATE herald_log_lanes SET log_file = IF(? > position, ?, log_file),
  gtid_pos = IF((? > position OR gtid_pos = '' AND ? = position) AND ? <> '', ?, gtid_pos),
  position = GREATEST(position, ?), server_id = ?, updated_at = UTC_TIMESTAMP(6),
  lease_until = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND
WHERE lane = ? AND owner = ? AND lease_until >= UTC_TIMESTAMP(6)`,
		enc, pos.file, enc, enc, gtid, gtid, enc, server, sqlbuild.Micros(p.Lease), p.Lane, p.Owner)
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

// rebase starts the lane's record over on another server (a failover to a
// replica): the old server's file and offset mean nothing here, so they go
// (a position on this server's log starts from zero), while gtid_pos stays
// as the place to resume from until the first batch here is recorded.
func rebase(ctx context.Context, db loglane.Execer, p store.LogParams, server int64) error {
	res, err := db.ExecContext(ctx, `UPDATE herald_log_lanes SET log_file = '', position = 0, server_id = ?,
  updated_at = UTC_TIMESTAMP(6), lease_until = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND
WHERE lane = ? AND owner = ? AND lease_until >= UTC_TIMESTAMP(6)`, server, sqlbuild.Micros(p.Lease), p.Lane, p.Owner)
	if err != nil {
		return fmt.Errorf("mysql store: log lane %s: moving its position to server_id %d: %w", p.Lane, server, err)
	}
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
