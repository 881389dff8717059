package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/internal/sqlscan"
)

// columns is what every read returns, in scanRecord's order; the last one
// is the age on the database clock.
const columns = `id, event_id, tenant, topic, event_type, partition_key, headers, payload,
	created_at, available_at, status, attempts, last_error, lease_owner, delivered_at, receipt,
	updated_at, ` + now + ` - created_at`

// scopeFilter returns the AND terms (each starting with " AND ") and args
// that restrict rows, aliased as alias, to s's tenant and type filters.
func scopeFilter(alias string, s store.Scope) (string, []any) {
	var b strings.Builder
	var args []any
	if s.Tenant != "" {
		fmt.Fprintf(&b, " AND %s.tenant = ?", alias)
		args = append(args, s.Tenant)
	}
	if len(s.IncludeTypes) > 0 {
		fmt.Fprintf(&b, " AND %s.event_type IN (%s)", alias, placeholders(len(s.IncludeTypes)))
		for _, t := range s.IncludeTypes {
			args = append(args, t)
		}
	}
	if len(s.ExcludeTypes) > 0 {
		fmt.Fprintf(&b, " AND %s.event_type NOT IN (%s)", alias, placeholders(len(s.ExcludeTypes)))
		for _, t := range s.ExcludeTypes {
			args = append(args, t)
		}
	}
	return b.String(), args
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// Claim leases up to p.Limit claimable rows in one UPDATE … RETURNING.
// Unordered lanes take rows by (available_at, id), straight off the claim
// index; ordered lanes by id, skipping keys whose earlier rows block them.
//
// A key is (tenant, partition_key) within the table. An earlier row of the
// key blocks whichever lane it belongs to (in flight, backing off, or dead
// with ParkOnDead); a ready earlier row outside the lane's type filters does
// not, so lanes that split one table by type keep order only within a lane.
func (s *Store) Claim(ctx context.Context, p store.ClaimParams) ([]store.Record, error) {
	if t := s.mapped.Get(p.Table); t != nil {
		return t.Claim(ctx, p)
	}
	qt, err := quote(p.Table)
	if err != nil {
		return nil, err
	}
	if p.Limit <= 0 {
		return nil, fmt.Errorf("sqlite: claim %s: limit %d must be positive", p.Table, p.Limit)
	}
	if p.Lease <= 0 {
		return nil, fmt.Errorf("sqlite: claim %s: lease %v must be positive", p.Table, p.Lease)
	}
	query, args := claimQuery(qt, p)
	var recs []store.Record
	err = s.hotWrite(ctx, func(db *sql.DB, stmts *stmtCache) error {
		rows, err := stmts.query(ctx, db, query, args...)
		if err != nil {
			return err
		}
		recs, err = scanClaimed(rows)
		return err
	})
	if err != nil {
		return nil, wrap("claim", p.Table, err)
	}
	// RETURNING has no defined order; the relay wants claim order.
	slices.SortFunc(recs, func(a, b store.Record) int { return cmp.Compare(a.ID, b.ID) })
	return recs, nil
}

func claimQuery(qt string, p store.ClaimParams) (string, []any) {
	filter, fargs := scopeFilter("o", p.Scope)
	order := "o.available_at, o.id"
	keyGate := ""
	if p.Ordered {
		order = "o.id"
		// The status IN term repeats the key index's WHERE so SQLite can
		// use that partial index.
		blocking := "b.status <> 'dead' AND b.available_at > " + now
		if p.ParkOnDead {
			blocking = "(b.status = 'dead' OR b.available_at > " + now + ")"
		}
		keyGate = ` AND (o.partition_key = '' OR NOT EXISTS (
	SELECT 1 FROM ` + qt + ` b
	WHERE b.partition_key = o.partition_key AND b.tenant = o.tenant AND b.id < o.id
	  AND b.status IN ('pending', 'in_flight', 'dead') AND ` + blocking + `))`
	}
	// RETURNING sees the new values only, and available_at becomes the
	// lease end; so the claim keeps the old one in updated_at, which no one
	// reads on an in-flight row (every mark sets it again), and the last
	// column returns how long the row had been due (store.Record.DueFor),
	// in the same statement at no extra cost.
	query := `UPDATE ` + qt + ` SET status = 'in_flight', attempts = attempts + 1,
	lease_owner = ?, lease_token = ?, available_at = ` + now + ` + ?, updated_at = available_at
WHERE id IN (
	SELECT o.id FROM ` + qt + ` o
	WHERE o.status IN ('pending', 'in_flight') AND o.available_at <= ` + now + filter + keyGate + `
	ORDER BY ` + order + ` LIMIT ?)
RETURNING ` + columns + `, ` + now + ` - updated_at`
	args := make([]any, 0, len(fargs)+4)
	args = append(args, p.Owner, p.Token, p.Lease.Milliseconds())
	args = append(args, fargs...)
	args = append(args, p.Limit)
	return query, args
}

// queryer is a *sql.DB, *sql.Conn or *sql.Tx.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func queryRecords(ctx context.Context, q queryer, query string, args ...any) ([]store.Record, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return scanRecords(rows)
}

// scanRecords reads and closes rows.
func scanRecords(rows *sql.Rows) ([]store.Record, error) { return scanRows(rows, false) }

// scanClaimed reads and closes a claim's rows: columns and how long each
// row had been due, in milliseconds (store.Record.DueFor).
func scanClaimed(rows *sql.Rows) ([]store.Record, error) { return scanRows(rows, true) }

func scanRows(rows *sql.Rows, due bool) ([]store.Record, error) {
	defer rows.Close()
	var recs []store.Record
	for rows.Next() {
		var dueMs int64
		var extra []any
		if due {
			extra = []any{&dueMs}
		}
		r, err := scanRecord(rows, extra...)
		if err != nil {
			return nil, err
		}
		r.DueFor = time.Duration(max(dueMs, 0)) * time.Millisecond
		recs = append(recs, r)
	}
	return recs, rows.Err()
}

// scanner is *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

// scanRecord reads one row of columns, and of extra after them.
func scanRecord(sc scanner, extra ...any) (store.Record, error) {
	var (
		r                         store.Record
		headers, status, receipt  string
		created, available, ageMs int64
		updated                   int64
		delivered                 sql.NullInt64
	)
	ev := &r.Event
	dest := append([]any{&r.ID, &ev.ID, &ev.Tenant, &ev.Topic, &ev.Type, &ev.PartitionKey, &headers, &ev.Payload,
		&created, &available, &status, &r.Attempts, &r.LastError, &r.LeaseOwner, &delivered, &receipt, &updated, &ageMs}, extra...)
	err := sc.Scan(dest...)
	if err != nil {
		return r, err
	}
	ev.Headers, r.HeadersErr = sqlscan.DecodeHeaders(headers)
	if ev.Payload == nil {
		ev.Payload = []byte{}
	}
	ev.CreatedAt = time.UnixMilli(created)
	r.Status = store.Status(status)
	r.AvailableAt = time.UnixMilli(available)
	if r.Status == store.StatusDead {
		r.DiedAt = time.UnixMilli(updated) // a dead row's last change is its death
	}
	if delivered.Valid {
		r.DeliveredAt = time.UnixMilli(delivered.Int64)
	}
	r.Age = time.Duration(max(ageMs, 0)) * time.Millisecond
	_ = json.Unmarshal([]byte(receipt), &r.Receipt) // a bad receipt only loses the receipt
	return r, nil
}
