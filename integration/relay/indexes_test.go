package relay

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/broker/memory"
	"github.com/heraldhq/herald/internal/testenv"
	. "github.com/heraldhq/herald/relay"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/mysql"
)

// Rule: a relay refuses, before any lane starts, a lane whose table lacks
// an index its claims read (a MySQL table migrated for plain lanes only,
// read by an ordered or a fair lane), naming the lane, the index, the
// table and the fix; after store.MigrateFor for those lanes it runs them.
func TestRunRefusesLaneWithoutItsIndex(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := mysql.Open(ctx, testenv.MySQLDSN(), mysql.Options{})
	if err != nil {
		testenv.Unreachable(t, "MySQL/MariaDB", err)
	}
	defer s.Close()
	table := testenv.Name("herald_ix")
	defer s.Drop(context.Background(), table) //nolint:errcheck // best effort
	if err := s.Migrate(ctx, table); err != nil {
		t.Fatal(err)
	}
	pub := memory.New(memory.Config{})
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	lane := func(name string, mod func(*Lane)) Lane {
		l := Lane{Name: name, Table: table, Publisher: pub, Destination: broker.MustParseTemplate("t.{event_type}")}
		mod(&l)
		return l
	}
	plain := lane("plain", func(*Lane) {})
	ordered := lane("rooms", func(l *Lane) { l.Ordering = OrderingKey })
	fair := lane("fair", func(l *Lane) { l.FairTenants = true })
	for _, c := range []struct {
		lane  Lane
		index string
	}{{ordered, "ordered_claim, key_order"}, {fair, "tenant_claim"}} {
		r, err := New(Config{Store: s, Lanes: []Lane{plain, c.lane}, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		err = r.Run(ctx)
		for _, part := range []string{`lane "` + c.lane.Name + `"`, c.index, table, "herald migrate"} {
			if !errors.Is(err, store.ErrMissingIndex) || !strings.Contains(err.Error(), part) {
				t.Errorf("Run with lane %s on a plain table: %v; want store.ErrMissingIndex naming %q", c.lane.Name, err, part)
			}
		}
	}
	if err := store.MigrateFor(ctx, s, table, ordered.TableUse().Union(fair.TableUse())); err != nil {
		t.Fatal(err)
	}
	r, err := New(Config{Store: s, Lanes: []Lane{plain, ordered, fair}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithTimeout(ctx, 300*time.Millisecond)
	defer stop()
	if err := r.Run(runCtx); err != nil {
		t.Errorf("Run after MigrateFor: %v", err)
	}
}
