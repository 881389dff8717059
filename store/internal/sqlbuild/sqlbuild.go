// Package sqlbuild builds the parts of statements that the stores write
// alike: scope and "unselected" filters, placeholders and their
// PostgreSQL spelling, arguments, and values made storable (error texts,
// durations). The statements themselves stay in each store.
package sqlbuild

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/store"
)

// TrimError makes an error text storable: valid UTF-8 without NUL bytes
// (PostgreSQL text refuses both, strict MySQL the first), cut to
// store.MaxErrorLength bytes without splitting a rune.
func TrimError(s string) string {
	s = strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
	if len(s) <= store.MaxErrorLength {
		return s
	}
	cut := store.MaxErrorLength
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// Micros is d in whole microseconds, the unit both databases add to their
// clock (DATETIME(6) and timestamptz both keep microseconds).
func Micros(d time.Duration) int64 { return d.Microseconds() }

// ScopeWhere returns " AND …" conditions with ? placeholders for the tenant
// and type filters of s, and their arguments. Column names are unqualified
// unless alias is set.
func ScopeWhere(s store.Scope, alias string) (string, []any) {
	col := func(name string) string {
		if alias == "" {
			return name
		}
		return alias + "." + name
	}
	return ScopeWhereColumns(s, col("tenant"), col("event_type"))
}

// ScopeWhereColumns is ScopeWhere on the given (quoted or qualified)
// tenant and event type columns: a mapped table's own (package mapsql).
// tenant may be empty when s has no tenant.
func ScopeWhereColumns(s store.Scope, tenant, eventType string) (string, []any) {
	var b strings.Builder
	var args []any
	if s.Tenant != "" {
		b.WriteString(" AND " + tenant + " = ?")
		args = append(args, s.Tenant)
	}
	if len(s.IncludeTypes) > 0 {
		b.WriteString(" AND " + eventType + " IN (" + Marks(len(s.IncludeTypes)) + ")")
		args = append(args, StringArgs(s.IncludeTypes)...)
	}
	if len(s.ExcludeTypes) > 0 {
		b.WriteString(" AND " + eventType + " NOT IN (" + Marks(len(s.ExcludeTypes)) + ")")
		args = append(args, StringArgs(s.ExcludeTypes)...)
	}
	return b.String(), args
}

// Marks returns n comma-separated ? placeholders.
func Marks(n int) string {
	if n <= 0 {
		return ""
	}
	return strings.Repeat("?, ", n-1) + "?"
}

// Rebind turns ? placeholders into PostgreSQL's $1, $2, … The queries it is
// used on hold no ? inside literals.
func Rebind(query string) string { return dollars.Rebind(query) }

// dollars numbers placeholders $1, $2, … (herald.Dialect.Rebind).
var dollars = herald.Dialect{Placeholder: func(n int) string { return "$" + strconv.Itoa(n) }}

// Int64Args returns ids as query arguments.
func Int64Args(ids []int64) []any {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	return args
}

// StringArgs returns ss as query arguments.
func StringArgs(ss []string) []any {
	args := make([]any, len(ss))
	for i, s := range ss {
		args[i] = s
	}
	return args
}

// ReplaceTable puts the quoted table into a statement template's {{T}}.
func ReplaceTable(tmpl, quoted string) string { return strings.ReplaceAll(tmpl, "{{T}}", quoted) }
