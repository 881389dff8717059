package binlog

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"

	"vitess.io/vitess/go/mysql/replication"
)

// server is what a lane needs to know of the server it reads: its
// @@server_id, which tells a recorded position's server from another one
// after a failover, and whether it keeps GTIDs Herald can resume from
// (MariaDB; MySQL's GTID sets are not kept yet).
type server struct {
	id      int64
	mariaDB bool
}

// readServer reads the server's identity.
func (s *Store) readServer(ctx context.Context) (server, error) {
	var sv server
	var version string
	if err := s.DB().QueryRowContext(ctx, "SELECT @@server_id, VERSION()").Scan(&sv.id, &version); err != nil {
		return sv, fmt.Errorf("mysql store: reading the server id: %w", err)
	}
	sv.mariaDB = strings.Contains(version, "MariaDB")
	return sv, nil
}

// gtidAt is MariaDB's GTID position just after pos (pos must end a
// transaction, as every recorded position does); "" where the server
// cannot say (not MariaDB, or a position it does not have).
func (s *Store) gtidAt(ctx context.Context, sv server, pos position) (string, error) {
	if !sv.mariaDB || pos.file == "" {
		return "", nil
	}
	var gtid sql.NullString
	if err := s.DB().QueryRowContext(ctx, "SELECT BINLOG_GTID_POS(?, ?)", pos.file, pos.offset).Scan(&gtid); err != nil {
		return "", fmt.Errorf("mysql store: BINLOG_GTID_POS(%s): %w", pos, err)
	}
	return gtid.String, nil
}

// gtidTrack follows the stream's GTID position (MariaDB): the state at
// the position it started from, each transaction's GTID added at its
// commit, and the state at each batch end Next returned, kept until that
// end is recorded so that the position write can store it beside the file
// and offset. The zero value tracks nothing (MySQL, or a state unknown).
type gtidTrack struct {
	state replication.MariadbGTIDSet // nil: not tracked
	tx    *replication.MariadbGTID   // the open transaction's GTID

	mu   sync.Mutex // guards at and last: Record reads them on the recorder's goroutine
	at   map[uint64]string
	last struct {
		end  uint64
		gtid string
	}
}

// start tracks from state gtid at encoded position end ("": not tracked).
func (g *gtidTrack) start(end uint64, gtid string) error {
	if gtid == "" {
		return nil
	}
	set, err := replication.ParseMariadbGTIDSet(gtid)
	if err != nil {
		return fmt.Errorf("mysql store: GTID position %q: %w", gtid, err)
	}
	g.state = set.(replication.MariadbGTIDSet)
	g.at = map[uint64]string{}
	g.last.end, g.last.gtid = end, gtid
	return nil
}

// begin notes the GTID of the transaction that starts.
func (g *gtidTrack) begin(gtid replication.GTID) {
	if m, ok := gtid.(replication.MariadbGTID); ok && g.state != nil {
		g.tx = &m
	}
}

// commit adds the ending transaction's GTID to the state.
func (g *gtidTrack) commit() {
	if g.tx != nil {
		g.state.AddGTIDInPlace(*g.tx)
		g.tx = nil
	}
}

// endAt remembers the state as the one at batch end end.
func (g *gtidTrack) endAt(end uint64) {
	if g.state == nil {
		return
	}
	g.mu.Lock()
	g.at[end] = g.state.String()
	g.mu.Unlock()
}

// recorded returns the state at end, "" if unknown, and forgets the
// states of the ends before it (positions only move forward).
func (g *gtidTrack) recorded(end uint64) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if end == g.last.end {
		return g.last.gtid
	}
	gtid, ok := g.at[end]
	if !ok {
		return ""
	}
	for e := range g.at {
		if e <= end {
			delete(g.at, e)
		}
	}
	g.last.end, g.last.gtid = end, gtid
	return gtid
}
