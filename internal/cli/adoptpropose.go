package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/heraldhq/herald/store"
)

// columnGuesses are, per columns key in the order keys take columns, the
// names an outbox table commonly gives that column (compared in lower
// case, with a trailing _ms dropped), and what type the column must have
// (a time column's type is checked with the proposal, to be named).
var columnGuesses = []struct {
	key   string
	names []string
	kind  columnKind
}{
	{"id", []string{"event_id", "message_id", "event_uuid", "uuid", "id"}, anyType},
	{"type", []string{"event_type", "message_type", "event_name", "type"}, anyType},
	{"tenant", []string{"tenant", "tenant_id", "app_code", "app_id"}, anyType},
	{"key", []string{"partition_key", "message_key", "routing_key", "aggregate_id", "key"}, anyType},
	{"topic", []string{"topic", "aggregate_type"}, anyType},
	{"headers", []string{"headers"}, anyType},
	{"payload", []string{"payload", "payload_json", "body", "data", "message", "content"}, anyType},
	{"created_at", []string{"created_at", "created", "create_time", "created_time", "occurred_at"}, timeType},
	{"status", []string{"status", "state"}, anyType},
	{"attempts", []string{"attempts", "retry_count", "retries", "attempt_count", "retry_times"}, intType},
	{"next_attempt", []string{"next_attempt_at", "next_attempt", "next_retry_at", "next_retry_time", "available_at",
		"retry_at", "scheduled_at"}, timeType},
	{"lease_until", []string{"lease_until", "lock_until", "locked_until", "lease_expires_at", "lock_expire_at"}, timeType},
	{"lease_owner", []string{"lease_owner", "worker_id", "locked_by", "lock_owner", "owner"}, anyType},
	{"fence", []string{"fence", "lease_token", "fencing_token"}, intType},
	{"last_error", []string{"last_error", "error", "error_message"}, anyType},
	{"receipt", []string{"receipt"}, anyType},
	{"delivered_at", []string{"delivered_at", "published_at", "sent_at"}, timeType},
}

// columnKind is the type a guessed column must have.
type columnKind int

const (
	anyType columnKind = iota
	intType
	timeType
)

func (k columnKind) fits(c store.ColumnInfo) bool {
	switch k {
	case intType:
		return c.Integer
	}
	return true // a time column of neither unit is taken, for the check to name
}

// requiredColumns are the columns keys a mapping must have.
var requiredColumns = []string{"id", "type", "payload", "status", "next_attempt", "lease_until", "lease_owner"}

// statusGuesses are, per state, the status values an outbox table
// commonly uses for it, the one to propose when none is seen first.
var statusGuesses = []struct {
	state  string
	values []string
}{
	{"pending", []string{"pending", "new", "created", "ready", "queued", "waiting", "init", "retryable", "retry", "retrying"}},
	{"in_flight", []string{"delivering", "in_flight", "inflight", "processing", "sending", "publishing", "locked", "claimed",
		"running", "in_progress"}},
	{"delivered", []string{"delivered", "sent", "published", "done", "processed", "success", "succeeded", "completed", "complete"}},
	{"dead", []string{"dead", "failed", "failure", "error", "dead_letter", "abandoned", "discarded", "given_up"}},
}

// propose fills r.Mapping with what the table's columns, types and status
// values suggest; keys it found no column for are r.Problems, what to
// look at are r.Notes, and the indexes the proposal needs are checked.
func (r *adoptReport) propose(ctx context.Context, ins store.Inspector, info store.TableInfo) error {
	c := &r.Mapping.Columns
	found := proposeColumns(info, columnFields(c))
	for _, key := range requiredColumns {
		if !found[key] {
			r.Problems = append(r.Problems, fmt.Sprintf("columns.%s: no column of %s looks like it: name one", key, r.Table))
		}
	}
	r.Mapping.TimeUnit, r.Notes = proposeTimeUnit(info, c.TimeColumns())
	var values []store.ValueCount
	if c.Status != "" {
		var err error
		if values, err = ins.StatusValues(ctx, r.Table, c.Status); err != nil {
			return err
		}
	}
	r.setStatuses(values)
	var notes []string
	r.Mapping.Statuses, notes = proposeStatuses(values)
	r.Notes = append(r.Notes, notes...)
	if len(r.Problems) > 0 {
		return nil
	}
	create, err := ins.CheckMapping(ctx, r.Table, r.Mapping)
	var me *store.MappingError
	switch {
	case errors.As(err, &me):
		r.Problems = append(r.Problems, mismatches("", r.Mapping, me)...) // a time column of neither unit
	case err != nil:
		return err
	}
	r.CreateIndexes = append(r.CreateIndexes, create...)
	return nil
}

// columnFields are c's fields by their columns key.
func columnFields(c *store.Columns) map[string]*string {
	return map[string]*string{"id": &c.ID, "type": &c.Type, "tenant": &c.Tenant, "key": &c.Key, "topic": &c.Topic,
		"headers": &c.Headers, "payload": &c.Payload, "created_at": &c.CreatedAt, "status": &c.Status,
		"attempts": &c.Attempts, "next_attempt": &c.NextAttempt, "lease_until": &c.LeaseUntil,
		"lease_owner": &c.LeaseOwner, "fence": &c.Fence, "last_error": &c.LastError, "receipt": &c.Receipt,
		"delivered_at": &c.DeliveredAt}
}

// proposeColumns sets each field to the first column whose name is one of
// its guesses and whose type fits, each column taken once, and returns
// the keys it set.
func proposeColumns(info store.TableInfo, fields map[string]*string) map[string]bool {
	taken, found := map[string]bool{}, map[string]bool{}
	for _, g := range columnGuesses {
		for _, name := range g.names {
			col, ok := columnNamed(info, name)
			if ok && !taken[col.Name] && g.kind.fits(col) {
				*fields[g.key], taken[col.Name], found[g.key] = col.Name, true, true
				break
			}
		}
	}
	return found
}

// columnNamed finds the column called name, or name with _ms after it.
func columnNamed(info store.TableInfo, name string) (store.ColumnInfo, bool) {
	if c, ok := info.Column(name); ok {
		return c, true
	}
	return info.Column(name + "_ms")
}

// proposeTimeUnit is the time unit the time columns' types agree on
// (epoch_ms when they do not, with a note).
func proposeTimeUnit(info store.TableInfo, cols []string) (store.TimeUnit, []string) {
	ints, dates := 0, 0
	for _, name := range cols {
		c, _ := info.Column(name)
		if c.Integer {
			ints++
		} else if c.Datetime {
			dates++
		}
	}
	switch {
	case dates > 0 && ints == 0:
		return store.TimeDatetime, nil
	case dates > 0:
		return store.TimeEpochMillis, []string{fmt.Sprintf("time_unit: the time columns %s mix integer and datetime types; "+
			"one unit must fit them all", strings.Join(cols, ", "))}
	}
	return store.TimeEpochMillis, nil
}

// proposeStatuses places each value found under the state its name
// suggests (one value for each state but pending, the most held), retry
// values last among pending ones (a failed publish writes the last), and
// says which values it did not place and which states it found no value
// for.
func proposeStatuses(values []store.ValueCount) (store.Statuses, []string) {
	by := map[string][]string{}
	var notes []string
	for _, v := range values {
		state := guessState(v.Value)
		if state == "" || state != "pending" && len(by[state]) > 0 {
			notes = append(notes, fmt.Sprintf("statuses: value %q (%d rows) is placed in no state: place it, or its rows are never relayed",
				v.Value, v.Rows))
			continue
		}
		by[state] = append(by[state], v.Value)
	}
	for _, g := range statusGuesses {
		if len(by[g.state]) == 0 {
			by[g.state] = []string{g.values[0]}
			notes = append(notes, fmt.Sprintf("statuses.%s: no row has a value for it yet; %q is a guess", g.state, g.values[0]))
		}
	}
	pending := by["pending"]
	slices.SortStableFunc(pending, func(a, b string) int { return boolCmp(isRetry(a), isRetry(b)) })
	return store.Statuses{Pending: pending, InFlight: by["in_flight"][0], Delivered: by["delivered"][0], Dead: by["dead"][0]}, notes
}

func guessState(value string) string {
	for _, g := range statusGuesses {
		if slices.Contains(g.values, strings.ToLower(value)) {
			return g.state
		}
	}
	return ""
}

func isRetry(value string) bool { return strings.Contains(strings.ToLower(value), "retr") }

func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// stateOf names the state whose values hold v, or "".
func stateOf(s store.Statuses, v string) string {
	switch v {
	case s.InFlight:
		return "in_flight"
	case s.Delivered:
		return "delivered"
	case s.Dead:
		return "dead"
	}
	if slices.Contains(s.Pending, v) {
		return "pending"
	}
	return ""
}
