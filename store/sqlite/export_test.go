package sqlite

// DisableWriteQueue lets benchmarks compare the in-process write queue with
// letting SQLite's busy handler arbitrate.
func DisableWriteQueue(s *Store) { s.writer = nil }
