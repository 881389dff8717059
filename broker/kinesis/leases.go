package kinesis

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strings"

	"github.com/heraldhq/herald"
)

// DefaultShardTable is the table of shard leases and checkpoints.
const DefaultShardTable = "herald_kinesis_shards"

// ShardEnd is the checkpoint of a shard read to its end (closed by a
// reshard, every record applied): its children may start.
const ShardEnd = "SHARD_END"

// leaseRow is one shard's row.
type leaseRow struct {
	shard      string
	parents    []string
	checkpoint string // the last sequence number applied; "" none; ShardEnd
	owner      string // "" when free
	counter    int64  // bumped by every renewal: a holder that stops bumping is gone
}

// leaseStore keeps one row per shard of a stream, for one group, in the
// projection's database: who reads the shard (owner, and a counter the
// owner bumps to show it is alive: no clocks are compared across hosts)
// and how far its records are applied (checkpoint).
type leaseStore struct {
	db      *sql.DB
	dialect herald.Dialect
	table   string
	stream  string
	group   string
}

var tableName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// q puts the table's name in query and its placeholders in the
// database's form.
func (l *leaseStore) q(query string) string {
	return l.dialect.Rebind(strings.ReplaceAll(query, "{t}", l.table))
}

// migrate creates the table if it is missing.
func (l *leaseStore) migrate(ctx context.Context) error {
	_, err := l.db.ExecContext(ctx, l.q(`CREATE TABLE IF NOT EXISTS {t} (
		stream_name VARCHAR(128) NOT NULL,
		consumer_group VARCHAR(200) NOT NULL,
		shard_id VARCHAR(128) NOT NULL,
		parent_ids VARCHAR(300) NOT NULL DEFAULT '',
		checkpoint VARCHAR(128) NOT NULL DEFAULT '',
		owner VARCHAR(200) NOT NULL DEFAULT '',
		lease_counter BIGINT NOT NULL DEFAULT 0,
		PRIMARY KEY (stream_name, consumer_group, shard_id))`))
	if err != nil {
		return fmt.Errorf("kinesis: create %s: %w", l.table, err)
	}
	return nil
}

// add inserts the row of a shard not in known (the rows read last). When
// another process inserted it meanwhile, the duplicate is no error: the
// row is there. (No conflict clause: each database writes its own.)
func (l *leaseStore) add(ctx context.Context, shard string, parents []string, known map[string]leaseRow) error {
	if _, ok := known[shard]; ok {
		return nil
	}
	_, err := l.db.ExecContext(ctx, l.q("INSERT INTO {t} (stream_name, consumer_group, shard_id, parent_ids) VALUES (?, ?, ?, ?)"),
		l.stream, l.group, shard, strings.Join(parents, ","))
	if err == nil {
		return nil
	}
	var n int
	if qerr := l.db.QueryRowContext(ctx, l.q("SELECT COUNT(*) FROM {t} WHERE stream_name = ? AND consumer_group = ? AND shard_id = ?"),
		l.stream, l.group, shard).Scan(&n); qerr == nil && n == 1 {
		return nil
	}
	return err
}

// all returns every row of the stream and group.
func (l *leaseStore) all(ctx context.Context) (map[string]leaseRow, error) {
	rows, err := l.db.QueryContext(ctx, l.q(`SELECT shard_id, parent_ids, checkpoint, owner, lease_counter FROM {t}
		WHERE stream_name = ? AND consumer_group = ?`), l.stream, l.group)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]leaseRow{}
	for rows.Next() {
		var r leaseRow
		var parents string
		if err := rows.Scan(&r.shard, &parents, &r.checkpoint, &r.owner, &r.counter); err != nil {
			return nil, err
		}
		if parents != "" {
			r.parents = strings.Split(parents, ",")
		}
		out[r.shard] = r
	}
	return out, rows.Err()
}

// exec runs an UPDATE of one shard's row and reports whether it matched.
func (l *leaseStore) exec(ctx context.Context, query string, args ...any) (bool, error) {
	res, err := l.db.ExecContext(ctx, l.q(query), args...)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// take makes me the owner of a shard whose row still shows owner and
// counter as last seen (another process may have taken it meanwhile).
func (l *leaseStore) take(ctx context.Context, r leaseRow, me string) (bool, error) {
	return l.exec(ctx, `UPDATE {t} SET owner = ?, lease_counter = lease_counter + 1
		WHERE stream_name = ? AND consumer_group = ? AND shard_id = ? AND owner = ? AND lease_counter = ?`,
		me, l.stream, l.group, r.shard, r.owner, r.counter)
}

// renew bumps the counter of a shard me holds, writing its checkpoint
// when one is given; false means the lease was lost.
func (l *leaseStore) renew(ctx context.Context, shard, me, checkpoint string) (bool, error) {
	if checkpoint == "" {
		return l.exec(ctx, `UPDATE {t} SET lease_counter = lease_counter + 1
			WHERE stream_name = ? AND consumer_group = ? AND shard_id = ? AND owner = ?`, l.stream, l.group, shard, me)
	}
	return l.exec(ctx, `UPDATE {t} SET lease_counter = lease_counter + 1, checkpoint = ?
		WHERE stream_name = ? AND consumer_group = ? AND shard_id = ? AND owner = ?`, checkpoint, l.stream, l.group, shard, me)
}

// release gives a shard up (with its last checkpoint), for another
// process to take at once.
func (l *leaseStore) release(ctx context.Context, shard, me, checkpoint string) error {
	if checkpoint == "" {
		_, err := l.exec(ctx, `UPDATE {t} SET owner = '', lease_counter = lease_counter + 1
			WHERE stream_name = ? AND consumer_group = ? AND shard_id = ? AND owner = ?`, l.stream, l.group, shard, me)
		return err
	}
	_, err := l.exec(ctx, `UPDATE {t} SET owner = '', lease_counter = lease_counter + 1, checkpoint = ?
		WHERE stream_name = ? AND consumer_group = ? AND shard_id = ? AND owner = ?`, checkpoint, l.stream, l.group, shard, me)
	return err
}

// reset forgets every checkpoint of the stream and group, for a rebuild.
func (l *leaseStore) reset(ctx context.Context) error {
	_, err := l.db.ExecContext(ctx, l.q(`DELETE FROM {t} WHERE stream_name = ? AND consumer_group = ?`), l.stream, l.group)
	return err
}
