package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/loglane"
	"github.com/heraldhq/herald/store/internal/sqlbuild"
)

// Log lanes on PostgreSQL read the outbox table's INSERTs (and Herald's
// logical messages) through logical replication with pgoutput, from a slot
// and a publication Herald creates and names (docs/loglanes.md).

var _ store.LogReader = (*Store)(nil)

// MessagePrefix is the pg_logical_emit_message prefix of table's events.
func MessagePrefix(table string) string { return "herald:" + table }

// SlotName is the replication slot of a log lane.
func SlotName(lane string) string { return "herald_" + identPart(lane) }

// PublicationName is the publication of an outbox table's INSERTs.
func PublicationName(table string) string { return "herald_" + identPart(table) }

// identPart lowers s and turns everything but [a-z0-9_] into _, cut to fit
// PostgreSQL's 63-byte names with the herald_ prefix.
func identPart(s string) string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			b[i] = '_'
		}
	}
	return string(b[:min(len(b), 56)])
}

// CheckLog refuses a server whose log Herald cannot read: wal_level below
// logical, no replication slots or senders, or a role without REPLICATION.
func (s *Store) CheckLog(ctx context.Context) error {
	if s.dsn == "" {
		return fmt.Errorf("%w: log lanes need a store made by postgres.Open (a DSN for the replication connection)", store.ErrLogUnavailable)
	}
	var level, slots, senders string
	var canReplicate bool
	err := s.db.QueryRowContext(ctx, `SELECT current_setting('wal_level'), current_setting('max_replication_slots'),
  current_setting('max_wal_senders'), (SELECT rolreplication OR rolsuper FROM pg_roles WHERE rolname = current_user)`).
		Scan(&level, &slots, &senders, &canReplicate)
	switch {
	case err != nil:
		return fmt.Errorf("postgres store: reading the replication settings: %w", err)
	case level != "logical":
		return fmt.Errorf("%w: wal_level is %s; log lanes need wal_level = logical (ALTER SYSTEM SET wal_level = logical, then restart PostgreSQL)", store.ErrLogUnavailable, level)
	case slots == "0":
		return fmt.Errorf("%w: max_replication_slots is 0; log lanes need one slot each", store.ErrLogUnavailable)
	case senders == "0":
		return fmt.Errorf("%w: max_wal_senders is 0; log lanes need one WAL sender each", store.ErrLogUnavailable)
	case !canReplicate:
		return fmt.Errorf("%w: the role has no REPLICATION attribute (ALTER ROLE … REPLICATION)", store.ErrLogUnavailable)
	}
	return nil
}

// LogRequirements lists what log lanes need, with the server's values.
func (s *Store) LogRequirements(ctx context.Context) []string {
	show := func(q string) string {
		var v string
		if err := s.db.QueryRowContext(ctx, q).Scan(&v); err != nil {
			return "unknown: " + err.Error()
		}
		return v
	}
	return []string{
		"wal_level = logical (now " + show("SHOW wal_level") + "; a restart applies a change)",
		"max_replication_slots ≥ one per log lane (now " + show("SHOW max_replication_slots") + ")",
		"max_wal_senders ≥ one per log lane (now " + show("SHOW max_wal_senders") + ")",
		"a role with REPLICATION or superuser (now " + show(`SELECT CASE WHEN rolreplication OR rolsuper THEN 'yes' ELSE 'no' END FROM pg_roles WHERE rolname = current_user`) + ")",
		"the role owns each outbox table (CREATE PUBLICATION … FOR TABLE)",
	}
}

// OpenLog takes the lane's lease, sets up its publication and slot the first
// time, and starts streaming at the lane's recorded position.
func (s *Store) OpenLog(ctx context.Context, p store.LogParams) (store.LogStream, error) {
	if err := s.CheckLog(ctx); err != nil {
		return nil, err
	}
	table, err := quote(p.Table)
	if err != nil {
		return nil, err
	}
	pos, err := s.takeLease(ctx, p)
	if err != nil {
		return nil, err
	}
	st := &logStream{s: s, p: p, table: table, pub: PublicationName(p.Table), slot: SlotName(p.Lane)}
	st.pos.Start(pos)
	if err := st.open(ctx); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

// takeLease makes the lane's row (first time) and takes its lease if it is
// free, expired or ours; it returns the recorded position.
func (s *Store) takeLease(ctx context.Context, p store.LogParams) (uint64, error) {
	if _, err := s.db.ExecContext(ctx, `INSERT INTO herald_log_lanes (lane, slot, table_name) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
		p.Lane, SlotName(p.Lane), p.Table); err != nil {
		return 0, fmt.Errorf("postgres store: log lane %s: %w", p.Lane, err)
	}
	var pos int64
	err := s.db.QueryRowContext(ctx, `UPDATE herald_log_lanes SET owner = $2, lease_until = now() + $3 * interval '1 microsecond'
WHERE lane = $1 AND (owner = $2 OR owner = '' OR lease_until < now()) RETURNING position`,
		p.Lane, p.Owner, sqlbuild.Micros(p.Lease)).Scan(&pos)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, store.ErrLogLeaseHeld
	}
	if err != nil {
		return 0, fmt.Errorf("postgres store: log lane %s: lease: %w", p.Lane, err)
	}
	return uint64(pos), nil
}

// ensurePublication makes sure the publication pub exists and publishes
// table (quoted), and returns the table's relation id, which the stream's
// inserts must carry. added is true when the table was not published a
// moment ago: the publication was made now, or the table was dropped and
// made again (DROP TABLE takes a table out of its publications). The
// stream cannot read rows committed before that, so the caller hands them
// over.
func (s *Store) ensurePublication(ctx context.Context, pub, table string) (relid uint32, added bool, err error) {
	var exists, member bool
	err = s.db.QueryRowContext(ctx, `SELECT COALESCE(to_regclass($2)::oid, 0),
  EXISTS (SELECT 1 FROM pg_publication WHERE pubname = $1),
  EXISTS (SELECT 1 FROM pg_publication_rel r JOIN pg_publication p ON p.oid = r.prpubid
    WHERE p.pubname = $1 AND r.prrelid = to_regclass($2))`, pub, table).Scan(&relid, &exists, &member)
	switch {
	case err != nil:
		return 0, false, err
	case relid == 0:
		return 0, false, fmt.Errorf("table %s does not exist (run herald migrate)", table)
	case member:
		return relid, false, nil
	case exists:
		_, err = s.db.ExecContext(ctx, "ALTER PUBLICATION "+pub+" ADD TABLE "+table)
	default:
		_, err = s.db.ExecContext(ctx, "CREATE PUBLICATION "+pub+" FOR TABLE "+table+" WITH (publish = 'insert')")
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42710" { // made meanwhile by another relay
		return relid, false, nil
	}
	return relid, err == nil, err
}

// LogOwner is the lease_owner a log lane writes on the rows it hands over
// to its polling workers.
func LogOwner(lane string) string { return loglane.Owner(lane) }

// logDialect is the log lanes' shared bookkeeping's view of PostgreSQL,
// made once by New.
func (s *Store) logDialect() loglane.Dialect {
	return loglane.Dialect{Name: "postgres store", DB: s.db, Bind: sqlbuild.Rebind, Now: "now()", Schema: "current_schema()", Quote: quote,
		InTx: s.inTx, Exec: s.exec}
}

// renewLease extends the lease and records pos, if the lease is still ours.
func (s *Store) renewLease(ctx context.Context, p store.LogParams, pos uint64) error {
	return renewLeaseIn(ctx, s.db, p, pos)
}

func renewLeaseIn(ctx context.Context, db loglane.Execer, p store.LogParams, pos uint64) error {
	res, err := db.ExecContext(ctx, `UPDATE herald_log_lanes SET position = GREATEST(position, $3), updated_at = now(),
  lease_until = now() + $4 * interval '1 microsecond' WHERE lane = $1 AND owner = $2 AND lease_until >= now()`,
		p.Lane, p.Owner, int64(pos), sqlbuild.Micros(p.Lease))
	if err != nil {
		return fmt.Errorf("postgres store: log lane %s: position: %w", p.Lane, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return store.ErrLogLeaseLost
	}
	return nil
}

// dropLog removes what log lanes keep for table: its publication, and its
// lanes' slots, positions and unapplied marks (Drop).
func (s *Store) dropLog(ctx context.Context, table string) error {
	if _, err := s.db.ExecContext(ctx, "DROP PUBLICATION IF EXISTS "+PublicationName(table)); err != nil {
		return err
	}
	var exists bool
	if err := s.db.QueryRowContext(ctx, "SELECT to_regclass('herald_log_lanes') IS NOT NULL").Scan(&exists); err != nil || !exists {
		return err
	}
	// A reader that just stopped may hold its slot a moment longer.
	for try := 0; ; try++ {
		_, err := s.db.ExecContext(ctx, `SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots
WHERE slot_name IN (SELECT slot FROM herald_log_lanes WHERE table_name = $1)`, table)
		var pe *pgconn.PgError
		if err == nil || !errors.As(err, &pe) || pe.Code != "55006" || try == 100 {
			if err != nil {
				return err
			}
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := s.db.ExecContext(ctx, "DELETE FROM herald_log_lanes WHERE table_name = $1", table); err != nil {
		return err
	}
	// Unapplied marks name rows by id: a table made again under the name
	// numbers its rows from 1 again, and they must not be marked.
	_, err := s.db.ExecContext(ctx, "DELETE FROM herald_log_marks WHERE table_name = $1", table)
	return err
}
