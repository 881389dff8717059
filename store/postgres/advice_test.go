package postgres_test

import (
	"context"
	"strings"
	"testing"

	"github.com/heraldhq/herald/internal/testenv"
)

// Rule: the store warns about autovacuum turned off, for the server or for
// one outbox table, and says nothing of tables where it runs (or that do
// not exist yet).
func TestAdviceNamesATableWithoutAutovacuum(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	off, on := testenv.Name("advice_off"), testenv.Name("advice_on")
	for _, table := range []string{off, on} {
		if err := s.Migrate(ctx, table); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Drop(ctx, table) })
	}
	if _, err := s.DB().Exec(`ALTER TABLE "` + off + `" SET (autovacuum_enabled = OFF)`); err != nil {
		t.Fatal(err)
	}
	var server string
	if err := s.DB().QueryRow("SHOW autovacuum").Scan(&server); err != nil {
		t.Fatal(err)
	}
	advice, err := s.Advice(ctx, []string{off, on, testenv.Name("advice_missing")})
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(advice, "\n")
	if strings.Contains(text, on) {
		t.Errorf("advice names %s, whose autovacuum runs:\n%s", on, text)
	}
	if got := strings.Contains(text, "autovacuum is off on this server"); got != (server == "off") {
		t.Errorf("server's autovacuum = %s, advice says it is off: %v\n%s", server, got, text)
	}
	if server == "on" && !strings.Contains(text, "autovacuum is off for table "+off) {
		t.Errorf("advice does not name %s, whose autovacuum is off:\n%s", off, text)
	}
	if len(advice) == 0 {
		t.Fatal("no advice for a table with autovacuum off")
	}
	for table, want := range map[string]bool{off: true, on: false} {
		if got, err := s.AutovacuumDisabled(ctx, table); err != nil || got != want {
			t.Errorf("autovacuum of %s read as disabled: %v (%v), want %v", table, got, err, want)
		}
	}
}
