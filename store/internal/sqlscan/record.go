// Package sqlscan reads rows into the store package's types: outbox
// records (with strict header decoding), lane statistics, lane states, id
// and string columns, and the operator reads List and Get that the MySQL
// and PostgreSQL stores write alike.
package sqlscan

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/heraldhq/herald/store"
)

// Finish completes a scanned record: status, decoded headers (or why they
// cannot be, in HeadersErr) and receipt, times in UTC, and the age on the
// database clock (now is the database's).
func Finish(r *store.Record, status, headers string, delivered sql.NullTime, receipt sql.NullString, now time.Time) {
	// MySQL's schema version 4 stores status and lease_owner padded with
	// spaces to a fixed width; the other stores' values have none.
	r.Status = store.Status(strings.TrimRight(status, " "))
	r.LeaseOwner = strings.TrimRight(r.LeaseOwner, " ")
	r.Event.Headers, r.HeadersErr = DecodeHeaders(headers)
	if receipt.Valid && receipt.String != "" {
		// A receipt is informational; one that does not parse is left empty.
		_ = json.Unmarshal([]byte(receipt.String), &r.Receipt)
	}
	if r.Event.Payload == nil {
		r.Event.Payload = []byte{}
	}
	r.Event.CreatedAt = r.Event.CreatedAt.UTC()
	r.AvailableAt = r.AvailableAt.UTC()
	if r.Status == store.StatusDead {
		r.DiedAt = r.AvailableAt // Kill sets available_at to the time of death
	}
	if delivered.Valid {
		r.DeliveredAt = delivered.Time.UTC()
	}
	r.Age = max(now.Sub(r.Event.CreatedAt), 0)
}

// DecodeHeaders reads the headers column strictly: a JSON object whose
// values are all strings and whose names are not empty, as Enqueue writes
// it. Anything else (invalid JSON, an array, a number, an object with a
// non-string value) is not altered into some headers: the error says what
// is wrong and the relay kills the row (store.Record.HeadersErr), so an
// operator can fix and replay it. The error never fails a claim: one bad row
// from a plain INSERT must not stall the lane. An empty column and JSON
// null read as no headers: there is nothing in them to lose.
func DecodeHeaders(s string) (map[string]string, error) {
	if s == "" || s == "{}" || s == "null" {
		return nil, nil
	}
	// Valid headers decode in one pass; anything else goes the slow way,
	// which names what is wrong.
	var fast map[string]string
	if json.Unmarshal([]byte(s), &fast) == nil {
		if _, unnamed := fast[""]; !unnamed {
			if len(fast) == 0 {
				return nil, nil
			}
			return fast, nil
		}
	}
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, headersError(s, "it is not valid JSON (%v)", err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		if v == nil {
			return nil, nil
		}
		return nil, headersError(s, "it is %s", jsonKind(v))
	}
	out := make(map[string]string, len(obj))
	// Sorted, so a row with several bad headers always names the same one.
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		str, ok := obj[k].(string)
		switch {
		case k == "":
			return nil, headersError(s, "a header has an empty name")
		case !ok:
			return nil, headersError(s, "header %q is %s", k, jsonKind(obj[k]))
		}
		out[k] = str
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// headersError says why stored is not valid headers, keeping it verbatim.
func headersError(stored, format string, args ...any) error {
	return &store.HeadersError{Stored: stored, Reason: fmt.Sprintf(format, args...)}
}

// jsonKind names the JSON type of a decoded value, with an article.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	default:
		return "an object"
	}
}

// AddStat adds n rows of status (retried: attempts > 0) to st; age is the
// oldest of them.
func AddStat(st *store.LaneStats, status store.Status, retried bool, n int64, age time.Duration) {
	switch status {
	case store.StatusPending:
		if retried {
			st.Retrying += n
		} else {
			st.Pending += n
		}
		st.OldestPendingAge = max(st.OldestPendingAge, age)
	case store.StatusInFlight:
		st.InFlight += n
	case store.StatusDelivered:
		st.Delivered += n
	case store.StatusDead:
		st.Dead += n
	}
}

// recordColumns are the columns ScanRecords reads, in its order.
var recordColumns = []string{"id", "event_id", "tenant", "topic", "event_type", "partition_key", "headers", "payload",
	"status", "attempts", "last_error", "created_at", "available_at", "delivered_at", "receipt", "lease_owner"}

// RecordColumns lists the columns ScanRecords reads, qualified by alias
// unless it is empty.
func RecordColumns(alias string) string {
	if alias == "" {
		return strings.Join(recordColumns, ", ")
	}
	return alias + "." + strings.Join(recordColumns, ", "+alias+".")
}

// ScanRecords reads rows of RecordColumns plus the database's clock ("now",
// for the records' age), and closes rows.
func ScanRecords(rows *sql.Rows) ([]store.Record, error) {
	defer rows.Close()
	return ReadRecords(rows, false)
}

// ScanClaimed reads a claim's rows: RecordColumns, the database's clock and
// the time each row became due (its available_at before the claim rewrote
// it), which sets DueFor; it closes rows.
func ScanClaimed(rows *sql.Rows) ([]store.Record, error) {
	defer rows.Close()
	return ReadRecords(rows, true)
}

// Cursor is what ReadRecords reads from: *sql.Rows, or a driver's own rows
// (pgx's, on a pipelined claim that bypasses database/sql).
type Cursor interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// ReadRecords reads rows as ScanRecords (due false) or ScanClaimed (due
// true) do, leaving them open for the caller to close.
func ReadRecords(rows Cursor, due bool) ([]store.Record, error) {
	return readRecords(rows, due, false)
}

// ScanWithErrors reads rows as ScanRecords does, with one more column
// after the clock, attempt_errors, into Record.Errors; it closes rows.
func ScanWithErrors(rows *sql.Rows) ([]store.Record, error) {
	defer rows.Close()
	return readRecords(rows, false, true)
}

func readRecords(rows Cursor, due, withErrors bool) ([]store.Record, error) {
	var recs []store.Record
	for rows.Next() {
		var r store.Record
		var headers, status string
		var delivered sql.NullTime
		var receipt sql.NullString
		var now, dueAt time.Time
		dest := []any{&r.ID, &r.Event.ID, &r.Event.Tenant, &r.Event.Topic, &r.Event.Type,
			&r.Event.PartitionKey, &headers, &r.Event.Payload, &status, &r.Attempts, &r.LastError,
			&r.Event.CreatedAt, &r.AvailableAt, &delivered, &receipt, &r.LeaseOwner, &now}
		var attemptErrors sql.NullString
		if due {
			dest = append(dest, &dueAt)
		}
		if withErrors {
			dest = append(dest, &attemptErrors)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		Finish(&r, status, headers, delivered, receipt, now)
		r.Errors = DecodeAttemptErrors(attemptErrors.String)
		if due {
			r.DueFor = max(now.Sub(dueAt), 0)
		}
		recs = append(recs, r)
	}
	return recs, rows.Err()
}

// ScanStats sums rows of (status, attempts > 0, count, age of the oldest in
// microseconds) into lane stats, and closes rows.
func ScanStats(rows *sql.Rows) (store.LaneStats, error) {
	defer rows.Close()
	var st store.LaneStats
	for rows.Next() {
		var status string
		var retried bool
		var n, ageMicros int64
		if err := rows.Scan(&status, &retried, &n, &ageMicros); err != nil {
			return st, err
		}
		AddStat(&st, store.Status(strings.TrimRight(status, " ")), retried, n, time.Duration(ageMicros)*time.Microsecond)
	}
	return st, rows.Err()
}

// ReadIDs reads a column of ids, leaving rows open for the caller.
func ReadIDs(rows Cursor) ([]int64, error) {
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}
