package mysql

import "database/sql"

// MultiPool returns the claims' multi-statement pool, for tests.
func (s *Store) MultiPool() *sql.DB { return s.multi }
