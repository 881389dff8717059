package relay

import (
	"context"
	"testing"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/broker/memory"
	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/mysql"
	"github.com/heraldhq/herald/store/mysql/binlog"
)

// newBinlogEnv is an env on a MariaDB of the test's own with the binary
// log in row format.
func newBinlogEnv(t *testing.T) (*env, *testenv.MariaDB) {
	t.Helper()
	m, dsn := testenv.NewBinlogMariaDB(t)
	s, err := binlog.Open(context.Background(), dsn, mysql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	table := "log_outbox"
	// The log lanes of these tests keep per-key order.
	if err := store.MigrateFor(context.Background(), s, table, store.TableUse{Ordered: true}); err != nil {
		t.Fatal(err)
	}
	ob, err := herald.NewOutbox(herald.OutboxConfig{Table: table, Dialect: s.Dialect()})
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, store: s, ob: ob, pub: memory.New(memory.Config{}), table: table}, m
}

// Rule: as TestLogicalLaneRetriesWithoutBlockingOtherKeys, on a binlog lane.
func TestBinlogLaneRetriesWithoutBlockingOtherKeys(t *testing.T) {
	e, _ := newBinlogEnv(t)
	logLaneRetries(t, e)
}

// Rule: as TestLogicalBrokerOutageLosesNothing, on a binlog lane.
func TestBinlogBrokerOutageLosesNothing(t *testing.T) {
	e, _ := newBinlogEnv(t)
	logBrokerOutage(t, e)
}

// Rule: as TestLogicalDelayedEvent, on a binlog lane.
func TestBinlogDelayedEvent(t *testing.T) {
	e, _ := newBinlogEnv(t)
	logDelayedEvent(t, e)
}

// Rule: as TestLogicalLaneDeletesDelivered, on a binlog lane.
func TestBinlogLaneDeletesDelivered(t *testing.T) {
	e, _ := newBinlogEnv(t)
	logDeletesDelivered(t, e)
}
