package sqlite

import "strings"

// DisableWriteQueue lets benchmarks compare the in-process write queue with
// letting SQLite's busy handler arbitrate.
func DisableWriteQueue(s *Store) { s.writer = nil }

// CreateOutboxForTest exposes the outbox table's definition, clock filled
// in, to the black-box tests.
func CreateOutboxForTest(table string) string {
	return strings.ReplaceAll(createOutbox(`"`+table+`"`), "{{NOW}}", portableNow)
}

// OutboxColumns are the columns CheckTable requires.
var OutboxColumns = outboxColumns
