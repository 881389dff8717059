package store

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/heraldhq/herald"
)

// Mapping says how to read and write an outbox table that Herald did not
// make (an existing service's own outbox, docs/adopt.md): which of its
// columns hold what Herald's columns hold, which of its status values
// mean which of Herald's states, and how its time columns count time.
type Mapping struct {
	Columns  Columns
	Statuses Statuses
	TimeUnit TimeUnit
	// Body, when set, builds each message body as a JSON object of these
	// fields, in this order, instead of sending the payload column as it
	// is.
	Body []BodyField
	// HeaderColumns carries columns as message headers: header name →
	// column (`header_columns`). A broker's own use of headers then reads
	// them: RocketMQ's key_headers make them message keys, `{header.NAME}`
	// puts one in the destination. A NULL column sends no header.
	HeaderColumns map[string]string
}

// BodyField is one field of a body built from a mapped row: its JSON name
// and exactly one source.
type BodyField struct {
	// Field is the JSON field's name.
	Field string `yaml:"field,omitempty"`
	// Column fills it with a column's value: a number for a numeric
	// column, null for NULL, a string otherwise.
	Column string `yaml:"column,omitempty"`
	// Const fills it with this string.
	Const string `yaml:"const,omitempty"`
	// Payload fills it with the payload column: "raw" embeds it as JSON
	// (a row whose payload is not valid JSON goes dead, the column named),
	// "string" as a JSON string.
	Payload string `yaml:"payload,omitempty"`
}

// The BodyField.Payload values.
const (
	PayloadRaw    = "raw"
	PayloadString = "string"
)

// Columns names the mapped table's columns by what they hold. The YAML
// keys are a lane's `columns:` keys. ID, Type, Payload, Status,
// NextAttempt, LeaseUntil and LeaseOwner are required; the rest are
// optional, and docs/adopt.md says what the lane does without each.
type Columns struct {
	// ID is the event id, unique in the table: marks find rows by it.
	ID string `yaml:"id,omitempty"`
	// Type is the event type.
	Type string `yaml:"type,omitempty"`
	// Tenant and Key (the partition key): empty without them. Topic: the
	// table's name without it.
	Tenant string `yaml:"tenant,omitempty"`
	Key    string `yaml:"key,omitempty"`
	Topic  string `yaml:"topic,omitempty"`
	// Headers is a JSON object of strings; no user headers without it.
	Headers string `yaml:"headers,omitempty"`
	// Payload is the message body.
	Payload string `yaml:"payload,omitempty"`
	// CreatedAt is when the event was written (needed by discard_after).
	CreatedAt string `yaml:"created_at,omitempty"`
	// Status holds the row's state, in the values Statuses maps.
	Status string `yaml:"status,omitempty"`
	// Attempts counts failed publishes (retry and dead marks add one), as
	// an outbox worker's retry counter does; without it every event gets
	// unlimited retries.
	Attempts string `yaml:"attempts,omitempty"`
	// NextAttempt is when a pending row is due.
	NextAttempt string `yaml:"next_attempt,omitempty"`
	// LeaseUntil is when an in-flight row's claim runs out.
	LeaseUntil string `yaml:"lease_until,omitempty"`
	// LeaseOwner is the claiming worker; without Fence it also carries the
	// claim's fencing token ("node/lane-01#42").
	LeaseOwner string `yaml:"lease_owner,omitempty"`
	// Fence holds the claim's fencing token (an integer column).
	Fence string `yaml:"fence,omitempty"`
	// LastError keeps the last failure's text.
	LastError string `yaml:"last_error,omitempty"`
	// Receipt keeps the broker's receipt (JSON) of a delivered row.
	Receipt string `yaml:"receipt,omitempty"`
	// DeliveredAt is set when the broker accepted the event.
	DeliveredAt string `yaml:"delivered_at,omitempty"`
}

// Statuses maps Herald's row states to the table's status values.
type Statuses struct {
	// Pending are the values of rows waiting for (another) publish; a
	// row with any of them is claimed when its next attempt is due.
	Pending StatusValues `yaml:"pending,omitempty"`
	// Retry is what a failed publish writes. Defaults to Pending's last.
	Retry string `yaml:"retry,omitempty"`
	// InFlight, Delivered and Dead are the other states' values.
	InFlight  string `yaml:"in_flight,omitempty"`
	Delivered string `yaml:"delivered,omitempty"`
	Dead      string `yaml:"dead,omitempty"`
}

// StatusValues is one status value or a list of them.
type StatusValues []string

// UnmarshalYAML takes a scalar as a list of one.
func (v *StatusValues) UnmarshalYAML(unmarshal func(any) error) error {
	var one string
	if err := unmarshal(&one); err == nil {
		*v = StatusValues{one}
		return nil
	}
	var list []string
	if err := unmarshal(&list); err != nil {
		return errors.New("must be a status value or a list of them")
	}
	*v = list
	return nil
}

// TimeUnit is how a mapped table's time columns count time.
type TimeUnit string

const (
	// TimeDatetime: DATETIME/TIMESTAMP columns in UTC (MySQL, MariaDB),
	// timestamptz (PostgreSQL).
	TimeDatetime TimeUnit = "datetime"
	// TimeEpochMillis: integer milliseconds since the Unix epoch.
	TimeEpochMillis TimeUnit = "epoch_ms"
)

// IsZero says no mapping is configured (a table of Herald's own).
func (m Mapping) IsZero() bool {
	return m.Columns == Columns{} && reflect.ValueOf(m.Statuses).IsZero() && m.TimeUnit == "" && len(m.Body) == 0 &&
		len(m.HeaderColumns) == 0
}

// WithDefaults returns m with Statuses.Retry filled in.
func (m Mapping) WithDefaults() Mapping {
	if m.Statuses.Retry == "" && len(m.Statuses.Pending) > 0 {
		m.Statuses.Retry = m.Statuses.Pending[len(m.Statuses.Pending)-1]
	}
	return m
}

// column is one mapped column: its key under columns and its name.
type column struct{ key, name string }

// named lists the mapped columns that are set, in a fixed order.
func (c Columns) named() []column {
	all := []column{{"id", c.ID}, {"type", c.Type}, {"tenant", c.Tenant}, {"key", c.Key}, {"topic", c.Topic},
		{"headers", c.Headers}, {"payload", c.Payload}, {"created_at", c.CreatedAt}, {"status", c.Status},
		{"attempts", c.Attempts}, {"next_attempt", c.NextAttempt}, {"lease_until", c.LeaseUntil},
		{"lease_owner", c.LeaseOwner}, {"fence", c.Fence}, {"last_error", c.LastError},
		{"receipt", c.Receipt}, {"delivered_at", c.DeliveredAt}}
	var out []column
	for _, col := range all {
		if col.name != "" {
			out = append(out, col)
		}
	}
	return out
}

// Names returns every mapped column's name, for a check of the table.
func (c Columns) Names() []string {
	var out []string
	for _, col := range c.named() {
		out = append(out, col.name)
	}
	return out
}

// TimeColumns returns the mapped columns that hold times.
func (c Columns) TimeColumns() []string {
	var out []string
	for _, n := range []string{c.CreatedAt, c.NextAttempt, c.LeaseUntil, c.DeliveredAt} {
		if n != "" {
			out = append(out, n)
		}
	}
	return out
}

// Validate returns one error per bad setting, each starting with its key
// (columns.id, statuses.pending, time_unit), joined; nil when m is good.
func (m Mapping) Validate() error {
	var errs []error
	add := func(key string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", key, err))
		}
	}
	c := m.Columns
	for _, req := range []column{{"id", c.ID}, {"type", c.Type}, {"payload", c.Payload}, {"status", c.Status},
		{"next_attempt", c.NextAttempt}, {"lease_until", c.LeaseUntil}, {"lease_owner", c.LeaseOwner}} {
		if req.name == "" {
			add("columns."+req.key, errors.New("is required in a columns mapping"))
		}
	}
	seen := map[string]string{}
	for _, col := range c.named() {
		add("columns."+col.key, herald.ValidateIdentifier(col.name))
		if first, dup := seen[strings.ToLower(col.name)]; dup {
			add("columns."+col.key, fmt.Errorf("column %s is already columns.%s", col.name, first))
		}
		seen[strings.ToLower(col.name)] = col.key
	}
	errs = append(errs, m.Statuses.validate()...)
	errs = append(errs, validateBody(m.Body)...)
	errs = append(errs, validateHeaderColumns(m.HeaderColumns)...)
	switch m.TimeUnit {
	case TimeDatetime, TimeEpochMillis:
	case "":
		add("time_unit", errors.New("is required in a columns mapping: datetime or epoch_ms"))
	default:
		add("time_unit", fmt.Errorf("%q is not one of datetime, epoch_ms", m.TimeUnit))
	}
	return errors.Join(errs...)
}

func validateBody(fields []BodyField) []error {
	var errs []error
	seen := map[string]int{}
	for i, f := range fields {
		key := fmt.Sprintf("body[%d]", i)
		sources := 0
		for _, set := range []bool{f.Column != "", f.Const != "", f.Payload != ""} {
			if set {
				sources++
			}
		}
		switch {
		case f.Field == "":
			errs = append(errs, fmt.Errorf("%s.field: is required", key))
		case seen[f.Field] > 0:
			errs = append(errs, fmt.Errorf("%s.field: %q is already body[%d]", key, f.Field, seen[f.Field]-1))
		}
		seen[f.Field] = i + 1
		switch {
		case sources == 0:
			errs = append(errs, fmt.Errorf("%s (%s): has no source: give one of column, const, payload", key, f.Field))
		case sources > 1:
			errs = append(errs, fmt.Errorf("%s (%s): has more than one source of column, const, payload", key, f.Field))
		case f.Column != "":
			if err := herald.ValidateIdentifier(f.Column); err != nil {
				errs = append(errs, fmt.Errorf("%s.column: %w", key, err))
			}
		case f.Payload != "" && f.Payload != PayloadRaw && f.Payload != PayloadString:
			errs = append(errs, fmt.Errorf("%s.payload: %q is not one of raw, string", key, f.Payload))
		}
	}
	return errs
}

// BodyColumns returns the columns the body's fields read.
func (m Mapping) BodyColumns() []string {
	var out []string
	for _, f := range m.Body {
		if f.Column != "" {
			out = append(out, f.Column)
		}
	}
	return out
}

func (s Statuses) validate() []error {
	var errs []error
	seen := map[string]string{}
	value := func(key, v string) {
		switch {
		case v == "":
			errs = append(errs, fmt.Errorf("statuses.%s: is required in a columns mapping", key))
		case seen[v] != "":
			errs = append(errs, fmt.Errorf("statuses.%s: value %q is already statuses.%s", key, v, seen[v]))
		default:
			seen[v] = key
		}
	}
	if len(s.Pending) == 0 {
		value("pending", "")
	}
	for _, v := range s.Pending {
		value("pending", v)
	}
	value("in_flight", s.InFlight)
	value("delivered", s.Delivered)
	value("dead", s.Dead)
	if s.Retry != "" && seen[s.Retry] != "pending" {
		errs = append(errs, fmt.Errorf("statuses.retry: %q is not one of statuses.pending", s.Retry))
	}
	return errs
}

// Mapper is an optional Store ability: relaying from tables Herald did not
// make, read and written through a Mapping. On a mapped table the store's
// claims, marks, peeks, stats, Migrate and CheckTable use the mapping
// (Migrate then creates only Herald's own tables and checks the mapped
// one against its mapping). Stores without it refuse mapped lanes.
type Mapper interface {
	// MapTable makes table a mapped table; m must be valid. Mapping a
	// table twice with different mappings is refused.
	MapTable(table string, m Mapping) error
}

// ErrUnmapped is returned for a mapped lane on a store that is no Mapper.
var ErrUnmapped = errors.New("this store cannot relay from mapped tables")

// MapTable maps table on s when m is not zero (Mapper).
func MapTable(s Store, table string, m Mapping) error {
	if m.IsZero() {
		return nil
	}
	mp, ok := s.(Mapper)
	if !ok {
		return fmt.Errorf("table %s: %w", table, ErrUnmapped)
	}
	return mp.MapTable(table, m.WithDefaults())
}

// MappingError says how a mapped table does not match its mapping. It is a
// configuration error: waiting does not fix it, and neither does `herald
// migrate`, which never changes a mapped table.
type MappingError struct {
	Table string
	// NoTable says the table does not exist.
	NoTable bool
	// Missing are mapped columns the table lacks.
	Missing []string
	// Misfits are the columns whose types do not fit their use.
	Misfits []Misfit
}

// Misfit is a mapped column whose type does not fit its use.
type Misfit struct {
	Column string
	// Why says how: "is bigint, which time_unit datetime does not fit".
	Why string
}

func (e *MappingError) Error() string {
	if e.NoTable {
		return fmt.Sprintf("mapped table %s does not exist (Herald never creates a mapped table)", e.Table)
	}
	var parts []string
	if len(e.Missing) > 0 {
		parts = append(parts, "lacks column "+strings.Join(e.Missing, ", ")+" named in its columns mapping")
	}
	for _, m := range e.Misfits {
		parts = append(parts, "column "+m.Column+" "+m.Why)
	}
	return fmt.Sprintf("mapped table %s does not match its mapping: %s", e.Table, strings.Join(parts, "; "))
}

// Is makes errors.Is(err, ErrSchema) true.
func (e *MappingError) Is(target error) bool { return target == ErrSchema }
