package giftwall_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/heraldhq/herald/examples/giftwall"
	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/projector"
	"github.com/heraldhq/herald/projector/sqlproj"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/postgres"
)

// wallYAML is the gift wall as a configured projection: one upsert with
// named parameters from the event. The SQL is the database's own: {wall}
// is the target table, {outbox} the wallet outbox.
const wallYAML = `
name: gift_wall_sql
source: {outbox: "{outbox}"}
include_types: [WalletGiftDebited]
retry: {initial: 10ms, max: 100ms}
statements:
  - >-
    INSERT INTO {wall} (tenant, user_id, gift_id, total_count, last_received_at)
    VALUES (:event.tenant, :payload.receiver, :payload.gift_id, :payload.count, :payload.debited_at)
    {upsert}
`

// wallUpserts are the upsert clauses: SQLite and PostgreSQL share ON
// CONFLICT, MySQL/MariaDB has ON DUPLICATE KEY.
var wallUpserts = map[string]string{
	"sqlite": `ON CONFLICT (tenant, user_id, gift_id) DO UPDATE SET total_count = {wall}.total_count + excluded.total_count,
    last_received_at = CASE WHEN excluded.last_received_at > {wall}.last_received_at THEN excluded.last_received_at ELSE {wall}.last_received_at END`,
	"mysql": `ON DUPLICATE KEY UPDATE total_count = total_count + VALUES(total_count),
    last_received_at = GREATEST(last_received_at, VALUES(last_received_at))`,
}

// TestYAMLGiftWallMatchesGoHandler: the gift wall declared as YAML + SQL
// (sqlproj) and the Go handler, fed the same 150 gifts from the wallet
// outbox, build the same rows on SQLite, MariaDB and PostgreSQL.
func TestYAMLGiftWallMatchesGoHandler(t *testing.T) {
	all := append(backends[:len(backends):len(backends)], backend{"postgres", func(t *testing.T) store.Store {
		testenv.RequireDB(t, "pgx", testenv.PostgresDSN(), "PostgreSQL")
		s, err := postgres.Open(context.Background(), testenv.PostgresDSN(), postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}})
	for _, b := range all {
		t.Run(b.name, func(t *testing.T) {
			s := b.open(t)
			ctx := context.Background()
			goApp := newApp(t, s, giftwall.Config{})
			sqlApp := newApp(t, s, giftwall.Config{}) // only its user_gift_wall is used
			cfg := goApp.Config()
			upsert := wallUpserts[s.Dialect().Name]
			if s.Dialect().Name == "postgres" {
				upsert = wallUpserts["sqlite"]
			}
			doc := strings.NewReplacer("{upsert}", upsert).Replace(wallYAML)
			doc = strings.NewReplacer("{wall}", sqlApp.Config().Prefix+"user_gift_wall", "{outbox}", cfg.WalletTable).Replace(doc)
			var p sqlproj.Projection
			if err := yaml.Unmarshal([]byte(doc), &p); err != nil {
				t.Fatal(err)
			}
			p.Table = cfg.ProjectionTable
			if err := p.Validate("projections[0]"); err != nil {
				t.Fatal(err)
			}
			compiled, err := sqlproj.Prepare(ctx, p, s, "projections[0]")
			if err != nil {
				t.Fatal(err)
			}
			yamlProj, err := compiled.Projector(quiet())
			if err != nil {
				t.Fatal(err)
			}
			goProj, err := goApp.NewProjector(quiet())
			if err != nil {
				t.Fatal(err)
			}
			if err := goApp.Seed(ctx, giftwall.DefaultTenants); err != nil {
				t.Fatal(err)
			}
			var st giftwall.TrafficStats
			if err := goApp.Generate(ctx, giftwall.TrafficConfig{Gifts: 150, Seed: 5}, &st); err != nil {
				t.Fatal(err)
			}
			runFromOutbox(t, s, cfg, goProj)
			runFromOutbox(t, s, cfg, yamlProj)
			for _, name := range []string{giftwall.ProjectionName, p.Name} {
				eventually(t, 60*time.Second, name+" projected 150 gifts", func() bool {
					ps, err := s.ProjectionStats(ctx, cfg.ProjectionTable, name)
					return err == nil && len(ps) == 1 && ps[0].Done == 150
				})
			}
			goRows, yamlRows := wallRows(t, s, cfg.Prefix), wallRows(t, s, sqlApp.Config().Prefix)
			if len(goRows) == 0 || !reflect.DeepEqual(goRows, yamlRows) {
				t.Fatalf("[same rows] Go handler %d rows, YAML %d rows:\n%v\n%v", len(goRows), len(yamlRows), goRows, yamlRows)
			}
			if rep, err := goApp.Verify(ctx); err != nil || !rep.OK() {
				t.Fatalf("%v, %v", rep, err)
			}
		})
	}
}

// runFromOutbox runs p on the wallet outbox of cfg until the test ends.
func runFromOutbox(t *testing.T, s store.Store, cfg giftwall.Config, p *projector.Projector) {
	t.Helper()
	src, err := projector.NewOutboxSource(projector.OutboxConfig{Store: s,
		Scope:      store.Scope{Table: cfg.WalletTable, IncludeTypes: []string{giftwall.WalletGiftDebited}},
		Projection: p.Name(), ProjectionTable: cfg.ProjectionTable, PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Run(ctx, src) }()
	t.Cleanup(func() { cancel(); <-done })
}

// wallRows reads a wall table in key order, one string per row.
func wallRows(t *testing.T, s store.Store, prefix string) []string {
	t.Helper()
	rows, err := s.DB().Query("SELECT tenant, user_id, gift_id, total_count, last_received_at FROM " + prefix +
		"user_gift_wall ORDER BY tenant, user_id, gift_id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var tenant, user, gift string
		var count, last int64
		if err := rows.Scan(&tenant, &user, &gift, &count, &last); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s/%s/%s=%d@%d", tenant, user, gift, count, last))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
