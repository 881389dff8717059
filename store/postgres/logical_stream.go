package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/loglane"
)

// statusEvery is how often the stream tells the server where it is, well
// inside the server's wal_sender_timeout (60 s by default).
const statusEvery = 10 * time.Second

// logStream is one lane's replication connection.
type logStream struct {
	s     *Store
	p     store.LogParams
	table string // quoted
	pub   string
	slot  string
	conn  *pgconn.PgConn
	dec   decoder
	// pos is the recorded position, Confirmed once Next took it and sent
	// it to the server, and the lease's renewal.
	pos        loglane.Position
	lastStatus time.Time
	// skipTo is the position the stream started at: transactions ending at
	// or before it were settled before (the server may send them again).
	skipTo pglogrepl.LSN
	// readEnd is the End of the last batch Next returned.
	readEnd pglogrepl.LSN
	// inTx is set between a transaction's begin and commit; tx holds its
	// events so far, kept across calls of Next, and xid names it.
	inTx bool
	tx   []store.Record
	xid  uint32
	// unseen lists the transactions with rows that Next returned and Record
	// has not recorded yet: Record waits until they are visible
	// (logical_visible.go).
	unseenMu sync.Mutex
	unseen   []txnEnd
	// committed holds the commit time of each record of the batch Next is
	// filling, for their DueFor.
	committed []time.Time
	// walEnd is the server's WAL end from its last keepalive, seen with
	// no transaction open: everything before it has been streamed.
	walEnd pglogrepl.LSN
	// pace lingers after a commit only while commits come fast.
	pace loglane.Pace
}

// open connects for replication, creates the publication and slot the
// first time, and starts streaming at the recorded position.
func (st *logStream) open(ctx context.Context) error {
	cfg, err := pgconn.ParseConfig(st.s.dsn)
	if err != nil {
		return fmt.Errorf("postgres store: bad DSN: %w", dsnError(err))
	}
	cfg.RuntimeParams["replication"] = "database"
	if st.conn, err = pgconn.ConnectConfig(ctx, cfg); err != nil {
		return herald.Unavailable(fmt.Errorf("postgres store: replication connection: %w", err))
	}
	relid, added, err := st.s.ensurePublication(ctx, st.pub, st.table)
	if err != nil {
		return fmt.Errorf("postgres store: publication %s: %w", st.pub, err)
	}
	if st.pos.Confirmed == 0 {
		if err := st.createSlot(ctx); err != nil {
			return err
		}
	} else if added {
		// The table was made again (or its publication dropped) since the
		// position was recorded: its rows so far are not in the stream.
		if _, err := st.handOverBacklog(ctx); err != nil {
			return fmt.Errorf("postgres store: log lane %s: handing over the rows before the table was published: %w", st.p.Lane, err)
		}
	}
	err = pglogrepl.StartReplication(ctx, st.conn, st.slot, st.confirmed(), pglogrepl.StartReplicationOptions{
		PluginArgs: pluginArgs(st.pub, st.conn.ParameterStatus("server_version"))})
	if err != nil {
		return st.startError(err)
	}
	st.skipTo = st.confirmed()
	st.dec = decoder{relid: relid, prefix: MessagePrefix(st.p.Table), rels: map[uint32]*pglogrepl.RelationMessage{},
		types: pgtype.NewMap()}
	if t := st.s.mapped.Get(st.p.Table); t != nil {
		if st.dec.mapped, err = t.LogRows(ctx); err != nil {
			return err
		}
	}
	st.lastStatus = time.Now()
	return nil
}

// createSlot makes the lane's slot (or adopts one left by an earlier
// position row), records where it starts and hands the rows committed
// before it to the polling workers.
func (st *logStream) createSlot(ctx context.Context) error {
	var start pglogrepl.LSN
	var lsn string
	err := st.s.db.QueryRowContext(ctx, "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = $1", st.slot).Scan(&lsn)
	if err == nil {
		start, err = pglogrepl.ParseLSN(lsn)
	} else {
		var res pglogrepl.CreateReplicationSlotResult
		res, err = pglogrepl.CreateReplicationSlot(ctx, st.conn, st.slot, "pgoutput",
			pglogrepl.CreateReplicationSlotOptions{Mode: pglogrepl.LogicalReplication, SnapshotAction: "NOEXPORT_SNAPSHOT"})
		if err == nil {
			start, err = pglogrepl.ParseLSN(res.ConsistentPoint)
		}
	}
	if err != nil {
		return fmt.Errorf("postgres store: slot %s: %w", st.slot, err)
	}
	if _, err := st.handOverBacklog(ctx); err != nil {
		return fmt.Errorf("postgres store: log lane %s: handing over the rows before the slot: %w", st.p.Lane, err)
	}
	if err := st.s.renewLease(ctx, st.p, uint64(start)); err != nil {
		return err
	}
	st.pos.Start(uint64(start))
	return nil
}

// confirmed is the position recorded and sent to the server: every
// transaction ending at or before it is settled.
func (st *logStream) confirmed() pglogrepl.LSN { return pglogrepl.LSN(st.pos.Confirmed) }

// startError names a slot that is gone (ErrLogPositionLost) or still in use
// by a reader that just died (ErrLogLeaseHeld: try again).
func (st *logStream) startError(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "42704":
			return fmt.Errorf("%w: replication slot %s does not exist (lane %s at %s; see docs/loglanes.md, Faults): %v",
				store.ErrLogPositionLost, st.slot, st.p.Lane, st.confirmed(), err)
		case pe.Code == "55006":
			return fmt.Errorf("%w: replication slot %s is still active: %v", store.ErrLogLeaseHeld, st.slot, err)
		case pe.Code == "55000" && pe.Message != "":
			return fmt.Errorf("%w: replication slot %s: %v (see docs/loglanes.md, Faults)", store.ErrLogPositionLost, st.slot, err)
		}
	}
	return fmt.Errorf("postgres store: start replication on %s: %w", st.slot, err)
}

// Next reads whole transactions until limit events, or until wait passed
// (linger, once it has events). A transaction cut by the deadline stays
// buffered for the next call.
func (st *logStream) Next(ctx context.Context, limit int, wait time.Duration) (store.LogBatch, error) {
	st.committed = st.committed[:0]
	b, err := st.next(ctx, limit, wait)
	// DueFor counts from the commit (the WAL's commit timestamp, on the
	// database's clock) to now on this process's clock, as the batch is
	// handed to the relay: a claimed row's DueFor stands at that point too.
	now := time.Now()
	for i := range b.Records {
		if i < len(st.committed) {
			b.Records[i].DueFor = max(now.Sub(st.committed[i]), 0)
		}
	}
	return b, err
}

func (st *logStream) next(ctx context.Context, limit int, wait time.Duration) (store.LogBatch, error) {
	b := store.LogBatch{End: uint64(max(st.readEnd, st.confirmed()))}
	idle, err := loglane.Fill(ctx, loglane.Steps[[]byte]{KeepAlive: st.keepAlive, Receive: st.receive, Handle: st.handle,
		Linger: st.pace.Linger(time.Now())},
		&b, limit, wait)
	st.readEnd = max(st.readEnd, pglogrepl.LSN(b.End))
	if idle {
		return st.idleEnd(b), err
	}
	return b, err
}

// idleEnd moves an idle batch's end to the server's WAL end, so that a
// lane whose table is quiet does not keep the server's WAL for others.
func (st *logStream) idleEnd(b store.LogBatch) store.LogBatch {
	if !st.inTx && st.walEnd > pglogrepl.LSN(b.End) {
		b.End = uint64(st.walEnd)
	}
	return b
}

// bufferedWait bounds a read past Fill's deadline: the connection has
// bytes of the next message buffered, and the rest of it is already on
// its way.
const bufferedWait = 100 * time.Millisecond

// receive returns the next CopyData payload, or ok false at the deadline
// (or at the next status update, or on another message). Past the deadline
// it still returns a message the connection has already read from the
// server (past a commit Fill asks for no more, or no more after its
// linger): a burst still fills the batch.
func (st *logStream) receive(ctx context.Context, deadline time.Time) ([]byte, bool, error) {
	if !time.Now().Before(deadline) {
		if st.conn.Frontend().ReadBufferLen() == 0 {
			return nil, false, nil
		}
		deadline = time.Now().Add(bufferedWait)
	}
	rctx, cancel := context.WithDeadline(ctx, loglane.Earliest(deadline, st.lastStatus.Add(statusEvery)))
	defer cancel()
	raw, err := st.conn.ReceiveMessage(rctx)
	if err != nil {
		if pgconn.Timeout(err) && ctx.Err() == nil {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("postgres store: replication stream: %w", err)
	}
	switch m := raw.(type) {
	case *pgproto3.CopyData:
		return m.Data, true, nil
	case *pgproto3.ErrorResponse:
		return nil, false, st.startError(pgconn.ErrorResponseToPgError(m))
	}
	return nil, false, nil
}

// handle decodes one message into b; done is true after a commit.
func (st *logStream) handle(data []byte, b *store.LogBatch) (bool, error) {
	switch data[0] {
	case pglogrepl.PrimaryKeepaliveMessageByteID:
		k, err := pglogrepl.ParsePrimaryKeepaliveMessage(data[1:])
		if err != nil {
			return false, err
		}
		if !st.inTx {
			st.walEnd = max(st.walEnd, k.ServerWALEnd)
		}
		if k.ReplyRequested {
			st.lastStatus = time.Time{}
		}
		return false, nil
	case pglogrepl.XLogDataByteID:
		x, err := pglogrepl.ParseXLogData(data[1:])
		if err != nil {
			return false, err
		}
		return st.decode(x, b)
	}
	return false, nil
}

// decode adds one transaction's events to b on its commit.
func (st *logStream) decode(x pglogrepl.XLogData, b *store.LogBatch) (bool, error) {
	if rec, ok, handled := st.dec.insert(x.WALData, st.p.Scope); handled {
		if ok {
			st.tx = append(st.tx, rec)
		}
		return false, nil
	}
	m, err := pglogrepl.Parse(x.WALData)
	if err != nil {
		return false, fmt.Errorf("postgres store: decoding the replication stream: %w", err)
	}
	switch m := m.(type) {
	case *pglogrepl.BeginMessage:
		st.inTx, st.tx, st.xid = true, st.tx[:0], m.Xid
	case *pglogrepl.CommitMessage:
		st.inTx = false
		if m.TransactionEndLSN <= st.skipTo {
			return true, nil // settled before a restart: the server sent it again
		}
		st.noteRows(m.TransactionEndLSN)
		if len(st.tx) > 0 {
			st.pace.Committed()
		}
		b.Records = append(b.Records, st.tx...)
		for range st.tx {
			st.committed = append(st.committed, m.CommitTime)
		}
		b.End = uint64(m.TransactionEndLSN)
		return true, nil
	default:
		if rec, ok := st.dec.event(m, st.p.Scope); ok {
			st.tx = append(st.tx, rec)
		}
	}
	return false, nil
}

// keepAlive sends the server the confirmed position when it asked or
// statusEvery passed, and renews the lease every lease/3.
func (st *logStream) keepAlive(ctx context.Context) error {
	if st.pos.CatchUp() {
		st.lastStatus = time.Time{} // tell the server at once
	}
	if err := st.pos.KeepLease(ctx, st.p.Lease, func(ctx context.Context, pos uint64) error {
		return st.s.renewLease(ctx, st.p, pos)
	}); err != nil {
		return err
	}
	if time.Since(st.lastStatus) < statusEvery {
		return nil
	}
	st.lastStatus = time.Now()
	return pglogrepl.SendStandbyStatusUpdate(ctx, st.conn, pglogrepl.StandbyStatusUpdate{WALWritePosition: st.confirmed()})
}

// txnEnd is a decoded transaction with rows: its xid and where it ends.
type txnEnd struct {
	end pglogrepl.LSN
	xid uint32
}

// noteRows stamps the committing transaction's records with its xid and,
// if it wrote rows, remembers it for Record.
func (st *logStream) noteRows(end pglogrepl.LSN) {
	rows := false
	for i := range st.tx {
		st.tx[i].Txn = uint64(st.xid)
		rows = rows || st.tx[i].ID > 0
	}
	if !rows {
		return
	}
	st.unseenMu.Lock()
	st.unseen = append(st.unseen, txnEnd{end: end, xid: st.xid})
	st.unseenMu.Unlock()
}

// unseenUpTo returns the xids of the remembered transactions ending at or
// before end.
func (st *logStream) unseenUpTo(end pglogrepl.LSN) []uint32 {
	st.unseenMu.Lock()
	defer st.unseenMu.Unlock()
	var xids []uint32
	for _, t := range st.unseen {
		if t.end <= end {
			xids = append(xids, t.xid)
		}
	}
	return xids
}

// forgetUpTo drops the remembered transactions ending at or before end.
func (st *logStream) forgetUpTo(end pglogrepl.LSN) {
	st.unseenMu.Lock()
	defer st.unseenMu.Unlock()
	keep := st.unseen[:0]
	for _, t := range st.unseen {
		if t.end > end {
			keep = append(keep, t)
		}
	}
	st.unseen = keep
}

// Record waits until the transactions up to end are visible (so that
// ApplyMarks finds their rows), then journals ds as delivered (ApplyMarks
// marks the rows) and records end in herald_log_lanes, fenced by the
// lease, in one transaction; Next confirms end to the server after it.
func (st *logStream) Record(ctx context.Context, end uint64, ds []store.Delivery) error {
	if err := st.s.awaitVisible(ctx, st.unseenUpTo(pglogrepl.LSN(end))); err != nil {
		return err
	}
	err := st.pos.Record(ctx, end, st.s.inTx, func(tx *sql.Tx) error {
		if err := st.record(ctx, tx, ds); err != nil {
			return fmt.Errorf("postgres store: journaling %d log events delivered: %w", len(ds), err)
		}
		return nil
	}, func(tx *sql.Tx) error { return renewLeaseIn(ctx, tx, st.p, end) })
	if err != nil {
		return err
	}
	st.forgetUpTo(pglogrepl.LSN(end))
	return nil
}

// Close ends the replication connection and gives the lease up.
func (st *logStream) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if st.conn != nil {
		_ = st.conn.Close(ctx)
	}
	st.s.logs.ReleaseLease(ctx, st.p)
	return nil
}
