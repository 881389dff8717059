package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/store/sqlite"
)

// walletDDL is a wallet service's own outbox table on SQLite, as it is.
const walletDDL = `CREATE TABLE wallet_outbox (
  app_code TEXT NOT NULL, event_id TEXT NOT NULL PRIMARY KEY, event_type TEXT NOT NULL,
  transaction_id TEXT NOT NULL, command_id TEXT NOT NULL, user_id INTEGER NOT NULL, asset_type TEXT NOT NULL,
  available_delta INTEGER NOT NULL, frozen_delta INTEGER NOT NULL, payload_json TEXT NOT NULL,
  created_at_ms INTEGER NOT NULL, status TEXT NOT NULL DEFAULT 'pending', retry_count INTEGER NOT NULL DEFAULT 0,
  next_retry_at_ms INTEGER NOT NULL DEFAULT 0, lock_until_ms INTEGER NOT NULL DEFAULT 0,
  worker_id TEXT NOT NULL DEFAULT '', last_error TEXT NOT NULL DEFAULT '')`

// walletConfig relays wallet_outbox through a columns mapping to stdout.
const walletConfig = `store: {driver: sqlite, dsn: wallet.db}
brokers:
  out: {type: stdout}
lanes:
  - name: wallet
    table: wallet_outbox
    broker: out
    destination: "wallet.{event_type}"
    poll_interval: 50ms
    columns: {id: event_id, type: event_type, tenant: app_code, key: user_id, payload: payload_json,
      created_at: created_at_ms, status: status, attempts: retry_count, next_attempt: next_retry_at_ms,
      lease_until: lock_until_ms, lease_owner: worker_id, last_error: last_error}
    statuses: {pending: [pending, retryable], in_flight: delivering, delivered: delivered, dead: dead}
    time_unit: epoch_ms
`

// walletDB makes dir/wallet.db with ddl run in it, and returns it open.
func walletDB(t *testing.T, dir string, ddl ...string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(dir, "wallet.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for _, stmt := range ddl {
		if _, err := s.DB().Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// Rule: `herald run` relays a table it did not make through its lane's
// columns mapping, from the config file alone: every row comes out on the
// broker and is marked delivered in the table's own status column, and
// `herald migrate` leaves the table as it is.
func TestAdoptRunRelaysWalletTable(t *testing.T) {
	dir := t.TempDir()
	s := walletDB(t, dir, walletDDL)
	for i := range 20 {
		if _, err := s.DB().Exec(`INSERT INTO wallet_outbox (app_code, event_id, event_type, transaction_id, command_id,
  user_id, asset_type, available_delta, frozen_delta, payload_json, created_at_ms)
VALUES ('voice', ?, 'WalletGiftDebited', 'tx', 'cmd', ?, 'GOLD', -1, 0, ?, 0)`,
			fmt.Sprintf("ev-%02d", i), 1000+i, fmt.Sprintf(`{"n":%d}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(dir, "herald.yaml")
	writeFile(t, cfg, walletConfig)
	if code, out := runChildSync(t, dir, "migrate", "--config", cfg); code != 0 {
		t.Fatalf("migrate: exit %d: %s", code, out)
	}
	run := startChild(t, dir, "run", "--config", cfg)
	waitFor(t, 60*time.Second, "20 rows delivered", func() bool {
		var n int
		err := s.DB().QueryRow(`SELECT COUNT(*) FROM wallet_outbox WHERE status = 'delivered'`).Scan(&n)
		return err == nil && n == 20
	})
	run.terminate(t)
	// status counts the table's own states; dead lists the dead ones (none).
	if code, status := runChildSync(t, dir, "status", "--json", "--config", cfg); code != 0 ||
		!strings.Contains(status, `"delivered":20`) || !strings.Contains(status, `"unselected":[{"store":"default","table":"wallet_outbox","rows":0}]`) {
		t.Errorf("status: exit %d: %s", code, status)
	}
	if code, dead := runChildSync(t, dir, "dead", "list", "--config", cfg); code != 0 || !strings.Contains(dead, "LAST ERROR") || strings.Contains(dead, "ev-") {
		t.Errorf("dead list: exit %d, want 0 and no rows: %s", code, dead)
	}
	out := run.stderr.String()
	for i := range 20 {
		if id := fmt.Sprintf("ev-%02d", i); !strings.Contains(out, id) {
			t.Fatalf("%s is not in the relay's output:\n%s", id, out)
		}
	}
	var cols int
	if err := s.DB().QueryRow(`SELECT COUNT(*) FROM pragma_table_info('wallet_outbox')`).Scan(&cols); err != nil || cols != 17 {
		t.Fatalf("wallet_outbox has %d columns (%v), want its own 17: Herald must not change it", cols, err)
	}
}

// Rule: a mapped table that does not match its lane stops `herald run` at
// start with exit 2 (a configuration error, not a database outage), naming
// the lane, the table and the columns; with and without migrations.
func TestAdoptRunRefusesMismatchedTable(t *testing.T) {
	noLock := strings.Replace(strings.Replace(walletDDL, "lock_until_ms INTEGER NOT NULL DEFAULT 0,", "", 1),
		"next_retry_at_ms INTEGER", "next_retry_at_ms TEXT", 1)
	cases := []struct {
		name string
		ddl  []string
		want []string
	}{
		{"missing columns and a misfit", []string{noLock}, []string{"store: lane wallet: mapped table wallet_outbox",
			"lacks column lock_until_ms", "column next_retry_at_ms is text, which time_unit epoch_ms does not fit"}},
		{"missing table", nil, []string{"store: lane wallet: mapped table wallet_outbox does not exist"}},
	}
	for _, c := range cases {
		for _, flags := range [][]string{nil, {"--no-migrate"}} {
			t.Run(c.name+fmt.Sprint(flags), func(t *testing.T) {
				dir := t.TempDir()
				walletDB(t, dir, c.ddl...)
				cfg := filepath.Join(dir, "herald.yaml")
				writeFile(t, cfg, walletConfig)
				code, out := runChildSync(t, dir, append([]string{"run", "--config", cfg}, flags...)...)
				if code != ExitUsage {
					t.Errorf("exit %d, want %d:\n%s", code, ExitUsage, out)
				}
				for _, w := range c.want {
					if !strings.Contains(out, w) {
						t.Errorf("the output does not say %q:\n%s", w, out)
					}
				}
			})
		}
	}
}
