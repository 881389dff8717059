package mysql

import (
	"database/sql"
	"fmt"
	"sync"
	"time"
)

// sessionBounds remembers which bound (sqltx.TxBound) each connection of
// the claims' pool has in its session, so that the SET goes out once per
// connection (and again only when a shorter lease lowers the bound), riding
// on the claim's first packet: no round trip of its own, nothing per claim.
type sessionBounds struct {
	mu      sync.Mutex
	applied map[any]time.Duration // by driver connection
}

// maxTracked caps sessionBounds.applied. Connections the pool closed stay
// in the map until it is cleared (which also keeps their addresses from
// being reused by new ones while listed); clearing only costs the live
// connections one more SET each.
const maxTracked = 256

// boundSetup returns the statement (ending in "; ") that gives conn's
// session bound, or "" if it has it, and a func to call once the statement
// has run.
func (s *Store) boundSetup(conn *sql.Conn, bound time.Duration) (string, func()) {
	var key any
	_ = conn.Raw(func(dc any) error { key = dc; return nil })
	s.sessions.mu.Lock()
	have := s.sessions.applied[key]
	s.sessions.mu.Unlock()
	if have == bound {
		return "", nil
	}
	return boundSQL(s.mariadb, bound), func() {
		s.sessions.mu.Lock()
		defer s.sessions.mu.Unlock()
		if s.sessions.applied == nil || len(s.sessions.applied) >= maxTracked {
			s.sessions.applied = map[any]time.Duration{}
		}
		s.sessions.applied[key] = bound
		if !s.mariadb {
			// wait_timeout also ends sessions idle in the pool: retire
			// them first. (One the server closed anyway fails the
			// driver's liveness check on reuse and is replaced.)
			s.multi.SetConnMaxIdleTime(bound / 2)
		}
	}
}

// boundSQL sets the session timeouts that keep a claim transaction from
// outliving its lease when the relay stops talking in the middle of it
// (SIGSTOP, a VM freeze, a partition): the server then ends the session and
// InnoDB rolls the transaction back, releasing its row locks.
//
//   - idle between statements inside the transaction: MariaDB's
//     idle_transaction_timeout (10.3+). MySQL has no such variable; the
//     claims' pool serves nothing but claims, so its wait_timeout (idle
//     between statements, in a transaction or not) does the same there.
//   - a result the client stopped reading (a large batch fills the socket
//     buffers): net_write_timeout; a statement it stopped sending half-way:
//     net_read_timeout.
//   - a lock wait: innodb_lock_wait_timeout (claims SKIP LOCKED, so this is
//     a backstop; a timed-out wait (1205) is retried).
func boundSQL(mariadb bool, bound time.Duration) string {
	idle := "wait_timeout"
	if mariadb {
		idle = "idle_transaction_timeout"
	}
	n := int64(bound / time.Second)
	return fmt.Sprintf("SET SESSION %s = %d, innodb_lock_wait_timeout = %d, net_write_timeout = %d, net_read_timeout = %d; ",
		idle, n, n, n, n)
}
