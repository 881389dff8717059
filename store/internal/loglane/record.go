// Package loglane is what the two log readers (PostgreSQL's logical
// replication in store/postgres, MariaDB's binary log in store/mysql/binlog)
// share: the records they read, the stray check, and the parts of their
// streams and of store.LogReader that do not depend on how a database
// writes its log. Each database's SQL stays in its own package.
package loglane

import (
	"slices"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/store"
)

// InScope applies a log lane's tenant and type filters to an event read
// from the database's log, as a claim's WHERE would.
func InScope(ev herald.Event, sc store.Scope) bool {
	switch {
	case sc.Tenant != "" && ev.Tenant != sc.Tenant:
		return false
	case len(sc.IncludeTypes) > 0 && !slices.Contains(sc.IncludeTypes, ev.Type):
		return false
	}
	return !slices.Contains(sc.ExcludeTypes, ev.Type)
}

// FinishRecord sets what a claim would on a record read from the log:
// times in UTC, the age on this process's clock (the log carries no read
// time), a non-nil payload.
func FinishRecord(rec *store.Record) {
	now := time.Now()
	if rec.Event.CreatedAt.IsZero() {
		rec.Event.CreatedAt = now.UTC()
	}
	if rec.AvailableAt.IsZero() {
		rec.AvailableAt = rec.Event.CreatedAt
	}
	if rec.Event.Payload == nil {
		rec.Event.Payload = []byte{}
	}
	if len(rec.Event.Headers) == 0 {
		rec.Event.Headers = nil
	}
	rec.Age = max(now.Sub(rec.Event.CreatedAt), 0)
}
