package binlog

import (
	"context"
	"database/sql"
	"errors"
	"sync/atomic"

	gomysql "github.com/go-sql-driver/mysql"
)

// The marker's writes (the UPDATE or DELETE of delivered rows, the DELETE
// of the journal rows it consumed) go to the binary log like any other
// write. With binlog_row_image = FULL, which log lanes need for the
// producers' INSERTs, an UPDATE of a 1 KiB outbox row logs its whole
// before and after images (~2.2 KiB) and a DELETE its whole before image:
// the server writes them, and every log lane's dump sends them to Herald,
// whose reader then skips them (it reads only INSERTs). On MariaDB the
// marker asks for a minimal image for its own statements (SET STATEMENT
// binlog_row_image = MINIMAL FOR …): the primary key and, for an UPDATE,
// the changed columns. A replica applies such events by primary key, as
// it does every row event of a table with one.

// minimalImage prefixes a statement whose row events need only the row's
// primary key (and the columns it changes).
const minimalImage = "SET STATEMENT binlog_row_image = MINIMAL FOR "

// rowImages remembers whether the server refused minimalImage: MySQL has
// no SET STATEMENT (1064), and MariaDB wants SUPER or BINLOG ADMIN for
// binlog_row_image (1227). After a refusal the marker writes full images.
type rowImages struct{ full atomic.Bool }

// exec runs q (a marker statement) with minimalImage unless the server
// refused it before; on a refusal it runs q as it is and remembers.
func (ri *rowImages) exec(ctx context.Context, tx *sql.Tx, q string, args ...any) (sql.Result, error) {
	if !ri.full.Load() {
		res, err := tx.ExecContext(ctx, minimalImage+q, args...)
		if !refusedMinimal(err) {
			return res, err
		}
		ri.full.Store(true)
	}
	return tx.ExecContext(ctx, q, args...)
}

// refusedMinimal reports the server's refusal of minimalImage: a syntax
// error (MySQL) or a missing privilege (MariaDB). Either fails the
// statement before it runs, so the transaction goes on.
func refusedMinimal(err error) bool {
	var me *gomysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1064 || me.Number == 1227)
}
