// Package sqlcommon holds the database-neutral pieces that the MySQL and
// PostgreSQL stores share: scope filters, error trimming, the ordered-claim
// guard and the retry loop for deadlocks. The SQL itself stays in each store.
package sqlcommon

import (
	"context"
	"fmt"
	"math/rand/v2"
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
	var b strings.Builder
	var args []any
	col := func(name string) string {
		if alias == "" {
			return name
		}
		return alias + "." + name
	}
	if s.Tenant != "" {
		b.WriteString(" AND " + col("tenant") + " = ?")
		args = append(args, s.Tenant)
	}
	if len(s.IncludeTypes) > 0 {
		b.WriteString(" AND " + col("event_type") + " IN (" + Marks(len(s.IncludeTypes)) + ")")
		for _, t := range s.IncludeTypes {
			args = append(args, t)
		}
	}
	if len(s.ExcludeTypes) > 0 {
		b.WriteString(" AND " + col("event_type") + " NOT IN (" + Marks(len(s.ExcludeTypes)) + ")")
		for _, t := range s.ExcludeTypes {
			args = append(args, t)
		}
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

// Missing returns the ids of want that are not in got, in want's order: the
// rows a fenced update did not change (their lease was lost).
func Missing(want, got []int64) []int64 {
	if len(got) == len(want) {
		return nil
	}
	seen := make(map[int64]bool, len(got))
	for _, id := range got {
		seen[id] = true
	}
	var lost []int64
	for _, id := range want {
		if !seen[id] {
			lost = append(lost, id)
		}
	}
	return lost
}

// Candidate is a row an ordered claim locked. Ordering is per partition
// key within a tenant.
type Candidate struct {
	ID     int64
	Tenant string
	Key    string
}

// OrderKey is the map key of blockers for a tenant's partition key.
func OrderKey(tenant, key string) string { return tenant + "\x00" + key }

// KeepOrdered applies the ordered-claim rule to locked candidates: a row
// with a partition key is kept only if no earlier unfinished row of its key
// lies outside the candidates. blockers maps a key to the smallest id of
// such an outside row (pending, in flight, or dead when parking), by
// OrderKey. Rows
// without a key are always kept. It returns the kept ids.
//
// The blockers come from a plain read, not a SKIP LOCKED one: a row another
// worker has locked (and is claiming right now) still counts, so two workers
// never hold rows of one key out of order.
func KeepOrdered(cands []Candidate, blockers map[string]int64) []int64 {
	kept := make([]int64, 0, len(cands))
	for _, c := range cands {
		if b, ok := blockers[OrderKey(c.Tenant, c.Key)]; c.Key != "" && ok && b < c.ID {
			continue
		}
		kept = append(kept, c.ID)
	}
	return kept
}

// Keys returns the distinct non-empty partition keys of cands (of any
// tenant) and the largest id.
func Keys(cands []Candidate) (keys []string, maxID int64) {
	seen := map[string]bool{}
	for _, c := range cands {
		maxID = max(maxID, c.ID)
		if c.Key != "" && !seen[c.Key] {
			seen[c.Key] = true
			keys = append(keys, c.Key)
		}
	}
	return keys, maxID
}

// CheckClaim refuses claim parameters that cannot work (no rows or no
// lease), wrapping bad (the store's ErrBadClaim).
func CheckClaim(p store.ClaimParams, bad error) error {
	if p.Limit <= 0 {
		return fmt.Errorf("%w: limit %d must be positive", bad, p.Limit)
	}
	if p.Lease <= 0 {
		return fmt.Errorf("%w: lease %v must be positive", bad, p.Lease)
	}
	return nil
}

// maxAttempts bounds the retries of a transaction that lost a deadlock or a
// serialization conflict; such losses clear up once the winner commits.
const maxAttempts = 10

// Retry runs f until it succeeds, fails with an error retryable does not
// accept, ctx ends, or maxAttempts is reached. It waits a jittered, growing
// pause between attempts so that the winners of the conflict finish.
func Retry(ctx context.Context, retryable func(error) bool, f func() error) error {
	var err error
	for attempt := 1; ; attempt++ {
		err = f()
		if err == nil || !retryable(err) || attempt == maxAttempts {
			return err
		}
		// Full jitter over a window that doubles from 1 ms, capped at 100 ms.
		window := min(time.Millisecond<<(attempt-1), 100*time.Millisecond)
		wait := time.Duration(rand.Int64N(int64(window) + 1))
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}
