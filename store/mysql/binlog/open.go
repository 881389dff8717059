package binlog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	vtmysql "vitess.io/vitess/go/mysql"
	"vitess.io/vitess/go/mysql/replication"
	"vitess.io/vitess/go/mysql/sqlerror"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/store"
)

// heartbeat is how often the server sends a heartbeat on an idle dump,
// so that a stream whose server vanished without closing the connection
// is noticed (silence reads as a broken connection after deadAfter).
const (
	heartbeat = time.Second
	deadAfter = 10 * heartbeat
)

// OpenLog takes the lane's lease, records the current end of the binary log
// the first time (and hands the rows committed before it to the polling
// workers), and starts a binlog dump at the recorded position: its file and
// offset on the server that recorded it, its GTID position on another one
// (a failover to a replica, MariaDB).
func (s *Store) OpenLog(ctx context.Context, p store.LogParams) (store.LogStream, error) {
	if err := s.CheckLog(ctx); err != nil {
		return nil, err
	}
	table, err := quote(p.Table)
	if err != nil {
		return nil, err
	}
	rec, err := s.takeLease(ctx, p)
	if err != nil {
		return nil, err
	}
	sv, err := s.readServer(ctx)
	if err != nil {
		return nil, err
	}
	st := &logStream{s: s, p: p, table: table, server: sv.id}
	if err := st.start(ctx, rec, sv); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

// start begins the dump where rec says, on server sv.
func (st *logStream) start(ctx context.Context, rec recorded, sv server) error {
	moved := rec.server != 0 && rec.server != sv.id
	switch {
	case rec.pos.file == "" && rec.gtid == "":
		pos, gtid, err := st.s.firstPosition(ctx, st.p, st.table, sv)
		if err != nil {
			return err
		}
		return st.open(ctx, pos, gtid)
	case moved || rec.pos.file == "":
		if rec.gtid == "" || !sv.mariaDB {
			return fmt.Errorf("%w: lane %s's position %s was recorded on the server with server_id %d, this is server_id %d, and no GTID position was recorded to resume from (see docs/loglanes.md, Faults)",
				store.ErrLogPositionLost, st.p.Lane, rec.pos, rec.server, sv.id)
		}
		if err := rebase(ctx, st.s.DB(), st.p, sv.id); err != nil {
			return err
		}
		return st.openAtGTID(ctx, rec.gtid)
	}
	gtid := rec.gtid
	if gtid == "" { // recorded before GTIDs were kept
		var err error
		if gtid, err = st.s.gtidAt(ctx, sv, rec.pos); err != nil {
			return err
		}
	}
	return st.open(ctx, rec.pos, gtid)
}

// firstPosition records the end of the binary log as the lane's position
// and hands the rows committed before it to the polling workers.
func (s *Store) firstPosition(ctx context.Context, p store.LogParams, table string, sv server) (position, string, error) {
	pos, err := s.currentPosition(ctx)
	if err != nil {
		return pos, "", err
	}
	gtid, err := s.gtidAt(ctx, sv, pos)
	if err != nil {
		return pos, "", err
	}
	handOver := func() (int64, error) { return s.logs.HandOverBacklog(ctx, p, table) }
	if t := s.Mapped(p.Table); t != nil {
		handOver = func() (int64, error) { return t.HandOverBacklog(ctx, p.Scope) }
	}
	if _, err := handOver(); err != nil {
		return pos, "", fmt.Errorf("mysql store: log lane %s: handing over the rows before its first position: %w", p.Lane, err)
	}
	return pos, gtid, renewLeaseIn(ctx, s.DB(), p, pos, sv.id, gtid)
}

// open loads the table's columns, connects as a replica and starts the dump
// at pos, whose GTID position is gtid ("": not tracked).
func (st *logStream) open(ctx context.Context, pos position, gtid string) error {
	if err := st.s.checkFileKept(ctx, st.p.Lane, pos); err != nil {
		return err
	}
	st.cur, st.base, st.skipTo, st.readEnd = pos, pos.base(), pos.encode(), pos.encode()
	return st.dump(ctx, pos.encode(), gtid, pos.file, pos.offset)
}

// openAtGTID starts the dump just after GTID position gtid (MariaDB): the
// server finds the file and offset; the stream learns them from the dump's
// first rotate event.
func (st *logStream) openAtGTID(ctx context.Context, gtid string) error {
	set, err := replication.ParseMariadbGTIDSet(gtid) // checked before it goes into a statement
	if err != nil {
		return fmt.Errorf("mysql store: lane %s's GTID position %q: %w", st.p.Lane, gtid, err)
	}
	st.byGTID = set.String()
	return st.dump(ctx, 0, st.byGTID, "", 4, "SET @slave_connect_state = '"+st.byGTID+"'",
		"SET @slave_gtid_strict_mode = 1", "SET @slave_gtid_ignore_duplicates = 0")
}

// dump loads the table's columns, connects as a replica and asks for the
// binary log from file and offset (after running the extra session
// statements); end is the encoded position it starts from.
func (st *logStream) dump(ctx context.Context, end uint64, gtid, file string, offset uint32, extra ...string) error {
	cols, err := st.s.columns(ctx, st.p.Table)
	if err != nil {
		return err
	}
	st.cols, st.db = cols, st.s.cfg.DBName
	if t := st.s.Mapped(st.p.Table); t != nil {
		if st.mapped, err = t.LogRows(ctx); err != nil {
			return err
		}
	}
	if err := st.gtids.start(end, gtid); err != nil {
		return err
	}
	st.pos.Start(end)
	st.lastEvent = time.Now()
	if err := st.s.DB().QueryRowContext(ctx, "SELECT @@global.binlog_checksum <> 'NONE'").Scan(&st.checksummed); err != nil {
		return fmt.Errorf("mysql store: reading binlog_checksum: %w", err)
	}
	conn, err := vtmysql.Connect(ctx, st.s.connParams())
	if err != nil {
		return herald.Unavailable(fmt.Errorf("mysql store: replication connection: %w", err))
	}
	st.conn = conn
	for _, q := range append([]string{
		// The server sends events with the checksum it writes; without
		// this it refuses a replica that does not say it understands it.
		"SET @master_binlog_checksum = @@global.binlog_checksum, @source_binlog_checksum = @@global.binlog_checksum",
		"SET @mariadb_slave_capability = 4", // MariaDB: send GTID events as they are
		"SET @master_heartbeat_period = " + strconv.FormatInt(heartbeat.Nanoseconds(), 10),
	}, extra...) {
		if _, err := conn.ExecuteFetch(q, 0, false); err != nil {
			return fmt.Errorf("mysql store: replication connection: %s: %w", q, err)
		}
	}
	if err := conn.SendBinlogDumpCommand(ServerID(st.p.Lane), file, offset); err != nil {
		return st.dumpError(err)
	}
	st.events = make(chan event, 256)
	st.stop = make(chan struct{})
	go st.readEvents(conn, st.events, st.stop)
	return nil
}

// connParams are the replication connection's settings, from the DSN.
func (s *Store) connParams() *vtmysql.ConnParams {
	cp := &vtmysql.ConnParams{Uname: s.cfg.User, Pass: s.cfg.Passwd, ConnectTimeoutMs: 10_000}
	if s.cfg.Net == "unix" {
		cp.UnixSocket = s.cfg.Addr
		return cp
	}
	host, port, err := net.SplitHostPort(s.cfg.Addr)
	if err != nil {
		host, port = s.cfg.Addr, "3306"
	}
	cp.Host = host
	cp.Port, _ = strconv.Atoi(port)
	return cp
}

// event is one binlog event, or the error that ended the dump.
type event struct {
	ev  vtmysql.BinlogEvent
	err error
}

// readEvents reads the dump into events until it fails or stop closes.
func (st *logStream) readEvents(conn *vtmysql.Conn, events chan<- event, stop <-chan struct{}) {
	for {
		ev, err := conn.ReadBinlogEvent()
		select {
		case events <- event{ev, err}:
		case <-stop:
			return
		}
		if err != nil {
			return
		}
	}
}

// dumpError names a position the server no longer has (ErrLogPositionLost:
// purged, or a file that never existed) apart from a lost connection.
func (st *logStream) dumpError(err error) error {
	var se *sqlerror.SQLError
	if errors.As(err, &se) && se.Num == sqlerror.ERMasterFatalReadingBinlog {
		where := st.cur.String()
		if st.byGTID != "" {
			where = "GTID " + st.byGTID
		}
		return fmt.Errorf("%w: the binary log no longer has lane %s's position %s (purged?; see docs/loglanes.md, Faults): %v",
			store.ErrLogPositionLost, st.p.Lane, where, err)
	}
	return herald.Unavailable(fmt.Errorf("mysql store: binlog dump of lane %s at %s: %w", st.p.Lane, st.cur, err))
}

// checkFileKept returns ErrLogPositionLost when the server no longer has
// pos's file (purged, or a server whose binary logs were reset): the dump
// would fail too, but only at its first read.
func (s *Store) checkFileKept(ctx context.Context, lane string, pos position) error {
	rows, err := s.DB().QueryContext(ctx, "SHOW BINARY LOGS")
	if err != nil {
		return fmt.Errorf("mysql store: SHOW BINARY LOGS: %w", err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var first string
	for rows.Next() {
		var name string
		vals := []any{&name}
		for range cols[1:] {
			vals = append(vals, new(sql.RawBytes))
		}
		if err := rows.Scan(vals...); err != nil {
			return err
		}
		if name == pos.file {
			return nil
		}
		if first == "" {
			first = name
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return fmt.Errorf("%w: the binary log no longer has lane %s's position %s (the oldest file is %s: purged?; see docs/loglanes.md, Faults)",
		store.ErrLogPositionLost, lane, pos, first)
}
