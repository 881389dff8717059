// Package binlog adds log lanes (`source: log`, docs/loglanes.md) to the
// MySQL/MariaDB store: it reads the outbox table's INSERTs from the binary
// log in row format, as a replica does, with vitess's binlog client. It is
// a package of its own so that programs using only store/mysql do not link
// vitess; the herald binary's driver list uses this package's Driver.
package binlog

import (
	"context"
	"fmt"
	"hash/crc32"
	"log/slog"
	"strings"

	gomysql "github.com/go-sql-driver/mysql"
	vtlog "vitess.io/vitess/go/vt/log"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/loglane"
	"github.com/heraldhq/herald/store/mysql"
)

// Store is a mysql.Store that is also a store.LogReader.
type Store struct {
	*mysql.Store
	cfg  *gomysql.Config // for the replication connection
	logs loglane.Dialect
	// images is whether the marker may ask for minimal row images
	// (rowimage.go).
	images rowImages
}

var _ store.LogReader = (*Store)(nil)

// Open opens a mysql.Store on dsn (see mysql.Open) that can also read its
// binary log.
func Open(ctx context.Context, dsn string, opts mysql.Options) (*Store, error) {
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("mysql store: bad DSN: %w", err)
	}
	s, err := mysql.Open(ctx, dsn, opts)
	if err != nil {
		return nil, err
	}
	b := &Store{Store: s, cfg: cfg}
	b.logs = loglane.Dialect{Name: "mysql store", DB: s.DB(), Now: "UTC_TIMESTAMP(6)", Schema: "DATABASE()", Quote: quote, InTx: b.inTx, Exec: b.exec}
	return b, nil
}

// exec runs one statement on the pool and returns the rows it changed.
func (s *Store) exec(ctx context.Context, q string, args ...any) (int64, error) {
	res, err := s.DB().ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// Driver is mysql.Driver whose stores read the binary log for log lanes.
type Driver struct{ mysql.Driver }

// NewConfig implements store.Driver.
func (Driver) NewConfig() store.DriverConfig { return &Config{} }

// RouteLogs implements store.LogRouter: vitess, and the Go MySQL driver
// (mysql.Driver.RouteLogs), log through l instead of to stderr.
func (d Driver) RouteLogs(l *slog.Logger) {
	d.Driver.RouteLogs(l)
	vtlog.SwapLogger(l)
}

// Config is mysql.Config opening a Store of this package.
type Config struct{ mysql.Config }

// Open implements store.DriverConfig.
func (*Config) Open(ctx context.Context, dsn string) (store.Store, error) {
	return Open(ctx, dsn, mysql.Options{})
}

// ServerID is the replica server id a lane's reader announces: fixed per
// lane (a reconnect replaces its own dump thread on the server, never
// another lane's) and in a range real replicas rarely use.
func ServerID(lane string) uint32 { return 0x48000000 | crc32.ChecksumIEEE([]byte(lane))&0x00ffffff }

// LogOwner is the lease_owner a log lane writes on the rows it hands over
// to its polling workers.
func LogOwner(lane string) string { return loglane.Owner(lane) }

// quote returns table as a MySQL identifier after validating it.
func quote(table string) (string, error) {
	if err := herald.ValidateIdentifier(table); err != nil {
		return "", fmt.Errorf("mysql store: table: %w", err)
	}
	return "`" + table + "`", nil
}

// settings are the server variables CheckLog reads.
type settings struct {
	logBin, format, image, version string
	grants                         []string
}

func (s *Store) readSettings(ctx context.Context) (settings, error) {
	var st settings
	err := s.DB().QueryRowContext(ctx, "SELECT @@log_bin, @@binlog_format, @@binlog_row_image, VERSION()").
		Scan(&st.logBin, &st.format, &st.image, &st.version)
	if err != nil {
		return st, fmt.Errorf("mysql store: reading the binary log settings: %w", err)
	}
	rows, err := s.DB().QueryContext(ctx, "SHOW GRANTS FOR CURRENT_USER()")
	if err != nil {
		return st, fmt.Errorf("mysql store: reading the grants: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var g string
		if err := rows.Scan(&g); err != nil {
			return st, err
		}
		st.grants = append(st.grants, g)
	}
	return st, rows.Err()
}

// hasGlobal reports whether the grants give priv (or ALL) on *.*.
func (st settings) hasGlobal(priv string) bool {
	for _, g := range st.grants {
		on := strings.Index(g, " ON *.* ")
		if on < 0 {
			continue
		}
		privs := strings.ToUpper(g[:on])
		if strings.Contains(privs, "ALL PRIVILEGES") || strings.Contains(privs, priv) {
			return true
		}
	}
	return false
}

// binlogMonitor is the privilege SHOW BINLOG STATUS needs: REPLICATION
// CLIENT, renamed BINLOG MONITOR in MariaDB 10.5 (the old name is an alias).
func (st settings) binlogMonitor() bool {
	return st.hasGlobal("REPLICATION CLIENT") || st.hasGlobal("BINLOG MONITOR") || st.hasGlobal("SUPER")
}

// CheckLog refuses a server whose binary log Herald cannot read: log_bin
// off, binlog_format not ROW, binlog_row_image not FULL, or a user without
// REPLICATION SLAVE and REPLICATION CLIENT.
func (s *Store) CheckLog(ctx context.Context) error {
	st, err := s.readSettings(ctx)
	switch {
	case err != nil:
		return err
	case st.logBin != "1":
		return fmt.Errorf("%w: log_bin is OFF; log lanes need the binary log (start the server with --log-bin, and --server-id on MySQL)", store.ErrLogUnavailable)
	case !strings.EqualFold(st.format, "ROW"):
		return fmt.Errorf("%w: binlog_format is %s; log lanes need binlog_format = ROW (SET GLOBAL binlog_format = 'ROW' and in the server's config)", store.ErrLogUnavailable, st.format)
	case !strings.EqualFold(st.image, "FULL"):
		return fmt.Errorf("%w: binlog_row_image is %s; log lanes need binlog_row_image = FULL", store.ErrLogUnavailable, st.image)
	case !st.hasGlobal("REPLICATION SLAVE"):
		return fmt.Errorf("%w: the user has no REPLICATION SLAVE privilege (GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO …)", store.ErrLogUnavailable)
	case !st.binlogMonitor():
		return fmt.Errorf("%w: the user has no REPLICATION CLIENT (BINLOG MONITOR) privilege (GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO …)", store.ErrLogUnavailable)
	}
	return nil
}

// LogRequirements lists what log lanes need, with the server's values.
func (s *Store) LogRequirements(ctx context.Context) []string {
	st, err := s.readSettings(ctx)
	if err != nil {
		return []string{"unknown: " + err.Error()}
	}
	yes := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	return []string{
		"log_bin = ON (now " + map[string]string{"1": "ON", "0": "OFF"}[st.logBin] + "; --log-bin at server start)",
		"binlog_format = ROW (now " + st.format + ")",
		"binlog_row_image = FULL (now " + st.image + ")",
		"a user with REPLICATION SLAVE (now " + yes(st.hasGlobal("REPLICATION SLAVE")) + ") and REPLICATION CLIENT / BINLOG MONITOR (now " + yes(st.binlogMonitor()) + ")",
		"binary logs kept (expire_logs_days / binlog_expire_logs_seconds) longer than any relay outage: a purged position stops the lane",
	}
}
