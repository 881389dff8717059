package binlog

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	vtmysql "vitess.io/vitess/go/mysql"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/loglane"
	"github.com/heraldhq/herald/store/internal/mapsql"
)

// logStream is one lane's binlog dump.
type logStream struct {
	s     *Store
	p     store.LogParams
	table string // quoted
	db    string // the DSN's database, where the table is
	cols  []string
	// mapped builds the records of a mapped table (nil: Herald's own).
	mapped *mapsql.LogRows
	conn   *vtmysql.Conn
	// events is fed by readEvents until stop closes.
	events chan event
	stop   chan struct{}
	format vtmysql.BinlogFormat
	tables map[uint64]*vtmysql.TableMap
	// cur is the file being read (and the last offset seen in it); base
	// is the name of its series, fixed (Record reads it on its goroutine).
	cur  position
	base string
	// lastEvent is when the dump last sent anything (heartbeats included).
	lastEvent time.Time
	// skipTo is where the dump started: transactions ending at or before
	// it were settled before.
	skipTo uint64
	// readEnd is the End of the last batch Next returned.
	readEnd uint64
	// pos is the recorded position, Confirmed once Next took it, and the
	// lease's renewal.
	pos loglane.Position
	// inTx is set between a transaction's begin and commit; tx holds its
	// events so far, kept across calls of Next.
	inTx bool
	tx   []store.Record
	// txOther is set when the transaction wrote a table other than
	// Herald's log tables: only such transactions move an idle lane's
	// position, else each position write would move it again.
	txOther bool
	// server is the @@server_id of the server read; gtids follows the
	// GTID position (MariaDB); byGTID is the GTID position the dump
	// started from after a failover ("": it started from a file and offset).
	server      int64
	gtids       gtidTrack
	byGTID      string
	checksummed bool // events end with a CRC32 (binlog_checksum)
}

// Next reads whole transactions until limit events, or until wait passed
// (linger, once it has events). A transaction cut by the deadline stays
// buffered for the next call.
func (st *logStream) Next(ctx context.Context, limit int, wait time.Duration) (store.LogBatch, error) {
	b := store.LogBatch{End: st.readEnd}
	// No linger: at 500 commits/s a 1 ms linger was most of commit →
	// broker (p50 1.8 ms against 0.45 without; docs/benchmarks.md), and a
	// burst fills the batch from the dump's queue anyway.
	_, err := loglane.Fill(ctx, loglane.Steps[vtmysql.BinlogEvent]{KeepAlive: st.keepAlive, Receive: st.receive, Handle: st.handle},
		&b, limit, wait)
	st.readEnd = max(st.readEnd, b.End)
	return b, err
}

// receive returns the next event, or ok false at the deadline (or at
// lease/3, to renew the lease while idle). Past the deadline it returns
// only an event already queued (Fill's batch ends where the dump is).
func (st *logStream) receive(ctx context.Context, deadline time.Time) (vtmysql.BinlogEvent, bool, error) {
	if !time.Now().Before(deadline) {
		select {
		case e := <-st.events:
			return st.received(e)
		default:
			return nil, false, nil
		}
	}
	deadline = loglane.Earliest(deadline, st.pos.RenewAt(st.p.Lease))
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	silence := time.NewTimer(time.Until(st.lastEvent.Add(deadAfter)))
	defer silence.Stop()
	select {
	case e := <-st.events:
		return st.received(e)
	case <-timer.C:
		return nil, false, nil
	case <-silence.C:
		return nil, false, herald.Unavailable(fmt.Errorf("mysql store: binlog dump of lane %s: no event or heartbeat for %s", st.p.Lane, deadAfter))
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
}

// received returns what the dump queued.
func (st *logStream) received(e event) (vtmysql.BinlogEvent, bool, error) {
	if e.err != nil {
		return nil, false, st.dumpError(e.err)
	}
	st.lastEvent = time.Now()
	return e.ev, true, nil
}

// handle applies one event; committed is true after a transaction ended.
func (st *logStream) handle(ev vtmysql.BinlogEvent, b *store.LogBatch) (bool, error) {
	if !ev.IsValid() {
		return false, fmt.Errorf("mysql store: binlog dump of lane %s: an event that does not parse", st.p.Lane)
	}
	if ev.IsFormatDescription() {
		f, err := ev.Format()
		if err != nil {
			return false, fmt.Errorf("mysql store: binlog format description: %w", err)
		}
		st.format = f
		return false, nil
	}
	if st.format.IsZero() {
		return false, st.fakeRotate(ev) // the dump's first event
	}
	if ev.IsHeartbeat() {
		return false, nil
	}
	ev, _, err := ev.StripChecksum(st.format)
	if err != nil {
		return false, fmt.Errorf("mysql store: binlog event checksum: %w", err)
	}
	return st.apply(ev, b)
}

// apply groups the row events of the lane's table into transactions.
func (st *logStream) apply(ev vtmysql.BinlogEvent, b *store.LogBatch) (bool, error) {
	switch {
	case ev.IsRotate():
		next, err := rotation(ev, st.format)
		if err != nil {
			return false, err
		}
		st.cur = next
		st.tables = nil // table ids are per file
	case ev.IsGTID():
		gtid, begins, _, _, err := ev.GTID(st.format)
		if err != nil {
			return false, fmt.Errorf("mysql store: binlog GTID event: %w", err)
		}
		st.inTx, st.tx, st.txOther = begins, st.tx[:0], false
		st.gtids.begin(gtid)
	case ev.IsXID():
		return st.commit(ev, b, true), nil
	case ev.IsQuery():
		return st.query(ev, b)
	case ev.IsTableMap():
		tm, err := ev.TableMap(st.format)
		if err != nil {
			return false, fmt.Errorf("mysql store: binlog table map: %w", err)
		}
		if st.tables == nil {
			st.tables = map[uint64]*vtmysql.TableMap{}
		}
		st.tables[ev.TableID(st.format)] = tm
		st.txOther = st.txOther || !heraldLogTable(tm)
	case ev.IsWriteRows():
		return false, st.writeRows(ev)
	}
	return false, nil
}

// rotation reads a rotate event (checksum stripped): the next file and
// the offset in it. vitess's NextLogFile assumes a checksum is still there
// and cuts the name short.
func rotation(ev vtmysql.BinlogEvent, f vtmysql.BinlogFormat) (position, error) {
	data := ev.Bytes()[f.HeaderLength:]
	if len(data) < 9 {
		return position{}, fmt.Errorf("mysql store: binlog rotate event of %d bytes", len(data))
	}
	return position{file: string(data[8:]), offset: uint32(binary.LittleEndian.Uint64(data))}, nil
}

// fakeRotate reads the rotate event a dump starts with, before the format
// description: the file the server starts sending from. A dump from a GTID
// position learns its file only from it; a dump from a file and offset
// knows them already.
func (st *logStream) fakeRotate(ev vtmysql.BinlogEvent) error {
	if !ev.IsRotate() || st.cur.file != "" {
		return nil
	}
	const v4Header = 19
	data := ev.Bytes()
	if st.checksummed {
		data = data[:len(data)-4]
	}
	if len(data) < v4Header+9 {
		return fmt.Errorf("mysql store: binlog rotate event of %d bytes", len(ev.Bytes()))
	}
	st.cur = position{file: string(data[v4Header+8:]), offset: uint32(binary.LittleEndian.Uint64(data[v4Header:]))}
	st.base = st.cur.base()
	return nil
}

// query handles BEGIN, COMMIT and ROLLBACK of transactions without a GTID
// event, and statements outside a transaction (DDL), each its own group.
func (st *logStream) query(ev vtmysql.BinlogEvent, b *store.LogBatch) (bool, error) {
	q, err := ev.Query(st.format)
	if err != nil {
		return false, fmt.Errorf("mysql store: binlog query event: %w", err)
	}
	switch sql := strings.ToUpper(strings.TrimSpace(q.SQL)); {
	case sql == "BEGIN":
		st.inTx, st.tx, st.txOther = true, st.tx[:0], false
	case sql == "COMMIT":
		return st.commit(ev, b, true), nil
	case strings.HasPrefix(sql, "ROLLBACK"):
		return st.commit(ev, b, false), nil
	case !st.inTx:
		st.txOther = true // DDL: its own group
		return st.commit(ev, b, false), nil
	}
	return false, nil
}

// writeRows adds the inserted rows of the lane's table to the transaction.
func (st *logStream) writeRows(ev vtmysql.BinlogEvent) error {
	tm := st.tables[ev.TableID(st.format)]
	if tm == nil || tm.Name != st.p.Table || tm.Database != st.db {
		return nil
	}
	rows, err := ev.Rows(st.format, tm)
	if err != nil {
		return fmt.Errorf("mysql store: binlog rows of %s: %w", st.p.Table, err)
	}
	for i := range rows.Rows {
		var rec store.Record
		if st.mapped != nil {
			rec = st.mappedRecord(tm, &rows, i)
		} else {
			rec = st.rowRecord(tm, &rows, i)
		}
		switch {
		case inScope(rec, st.p.Scope):
			st.tx = append(st.tx, rec)
		case st.mapped != nil:
			st.mapped.Forget(rec)
		}
	}
	return nil
}

// commit ends the current transaction at ev; keep adds its events to b.
// A transaction that ended at or before the dump's start was settled
// before: the server sent it again.
func (st *logStream) commit(ev vtmysql.BinlogEvent, b *store.LogBatch, keep bool) bool {
	st.inTx = false
	st.gtids.commit()
	st.cur.offset = uint32(ev.NextPosition())
	end := st.cur.encode()
	if end <= st.skipTo {
		st.tx = st.tx[:0]
		return true
	}
	if keep {
		b.Records = append(b.Records, st.tx...)
	}
	if st.txOther {
		b.End = max(b.End, end)
		st.gtids.endAt(end)
	}
	st.tx = st.tx[:0]
	return true
}

// heraldLogTable reports Herald's log lane tables, which the lane's own
// position writes change.
func heraldLogTable(tm *vtmysql.TableMap) bool {
	return tm.Name == "herald_log_lanes" || tm.Name == "herald_log_marks"
}

// keepAlive takes what Record recorded and renews the lease every lease/3.
func (st *logStream) keepAlive(ctx context.Context) error {
	st.pos.CatchUp()
	return st.pos.KeepLease(ctx, st.p.Lease, func(ctx context.Context, pos uint64) error {
		return renewLeaseIn(ctx, st.s.DB(), st.p, decode(st.base, pos), st.server, st.gtids.recorded(pos))
	})
}

// Record journals ds as delivered (ApplyMarks marks the rows) and records
// end in herald_log_lanes, fenced by the lease, in one transaction.
func (st *logStream) Record(ctx context.Context, end uint64, ds []store.Delivery) error {
	return st.pos.Record(ctx, end, st.s.inTx, func(tx *sql.Tx) error {
		if err := st.record(ctx, tx, ds); err != nil {
			return fmt.Errorf("mysql store: journaling %d log events delivered: %w", len(ds), err)
		}
		return nil
	}, func(tx *sql.Tx) error {
		return renewLeaseIn(ctx, tx, st.p, decode(st.base, end), st.server, st.gtids.recorded(end))
	})
}

// Close ends the dump and gives the lease up.
func (st *logStream) Close() error {
	if st.stop != nil {
		close(st.stop)
		st.stop = nil
	}
	if st.conn != nil {
		st.conn.Close()
		st.conn = nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st.s.logs.ReleaseLease(ctx, st.p)
	return nil
}
