package cli

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/sqlite"
)

// TestProjectionCommands drives status, replay --dead and rebuild on a
// projection table holding done, failed and dead rows.
func TestProjectionCommands(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "")
	s, err := sqlite.Open(context.Background(), filepath.Join(dir, "h.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if err := s.Migrate(ctx, "main_outbox"); err != nil {
		t.Fatal(err)
	}
	if err := s.MigrateProjections(ctx, store.DefaultProjectionTable); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB().Exec("CREATE TABLE wall (n INTEGER)"); err != nil {
		t.Fatal(err)
	}
	key := func(id string) store.ProjectionKey {
		return store.ProjectionKey{Table: store.DefaultProjectionTable, Projection: "giftwall", EventID: id}
	}
	for range 3 {
		if _, err := s.Apply(ctx, store.ApplyParams{ProjectionKey: key(herald.NewID()), Lease: time.Minute},
			func(tx *sql.Tx) error { _, err := tx.Exec("INSERT INTO wall VALUES (1)"); return err }); err != nil {
			t.Fatal(err)
		}
	}
	deadID := herald.NewID()
	if _, _, err := s.Fail(ctx, store.ProjectionFailure{ProjectionKey: key(deadID), Error: "bad payload", Permanent: true,
		Event: herald.Event{ID: deadID, Topic: "t", Type: "T"}}); err != nil {
		t.Fatal(err)
	}

	code, out, errOut := cliRun(t, "--config", cfg, "projection", "status", "--json", "--outbox", "main_outbox")
	if code != ExitOK {
		t.Fatalf("status: %d %s", code, errOut)
	}
	var st struct{ Projections []projectionStatus }
	if err := json.Unmarshal([]byte(out), &st); err != nil || len(st.Projections) != 1 ||
		st.Projections[0].Done != 3 || st.Projections[0].Dead != 1 || st.Projections[0].Lag != 0 {
		t.Fatalf("status --json = %s (%v)", out, err)
	}
	if code, out, _ := cliRun(t, "--config", cfg, "projection", "status"); code != ExitOK || !strings.Contains(out, "giftwall") {
		t.Errorf("status table: %d %s", code, out)
	}
	if code, _, errOut := cliRun(t, "--config", cfg, "projection", "replay", "giftwall"); code != ExitUsage {
		t.Errorf("replay without --dead: exit %d (%s), want %d", code, errOut, ExitUsage)
	}
	if code, out, _ := cliRun(t, "--config", cfg, "projection", "replay", "giftwall", "--dead"); code != ExitOK || !strings.HasPrefix(out, "1 ") {
		t.Errorf("replay --dead: %d %s", code, out)
	}
	checkRebuildGuards(t, cfg, s)
	if code, _, errOut := cliRun(t, "--config", cfg, "projection", "rebuild", "giftwall", "--yes", "--reset-sql", "DELETE FROM nowhere"); code != ExitFailure || !strings.Contains(errOut, "reset-sql") {
		t.Errorf("rebuild with a failing reset: %d %s", code, errOut)
	}
	code, out, errOut = cliRun(t, "--config", cfg, "projection", "rebuild", "giftwall", "--yes", "--reset-sql", "DELETE FROM wall")
	if code != ExitOK || !strings.Contains(out, "4 rows deleted") || strings.Contains(errOut, "warning") {
		t.Fatalf("rebuild: %d %s %s", code, out, errOut)
	}
	var n int
	if err := s.DB().QueryRow("SELECT count(*) FROM wall").Scan(&n); err != nil || n != 0 {
		t.Errorf("rebuild left %d rows in the read model (%v)", n, err)
	}
}

// checkRebuildGuards: a rebuild that would delete the ledger of
// projection giftwall (4 rows, 3 in the read model wall) says so and
// changes nothing on --dry-run, on "no", without a terminal and for an
// unknown name (exit 2); without --reset-sql it warns.
func checkRebuildGuards(t *testing.T, cfg string, s *sqlite.Store) {
	t.Helper()
	code, out, errOut := cliRun(t, "--config", cfg, "projection", "rebuild", "giftwall", "--dry-run", "--reset-sql", "DELETE FROM wall")
	if code != ExitOK || !strings.Contains(out, "would delete 4 ledger row(s) of projection giftwall") ||
		!strings.Contains(out, "DELETE FROM wall") {
		t.Errorf("rebuild --dry-run: %d %q %q", code, out, errOut)
	}
	if code, out, errOut := cliRun(t, "--config", cfg, "projection", "rebuild", "nosuch", "--yes"); code != ExitUsage ||
		!strings.Contains(errOut, `no projection "nosuch"`) || !strings.Contains(errOut, "known: giftwall") {
		t.Errorf("rebuild nosuch: %d %q %q, want exit %d naming the known projections", code, out, errOut, ExitUsage)
	}
	answer(t, "n\n")
	if code, _, errOut := cliRun(t, "--config", cfg, "projection", "rebuild", "giftwall"); code != ExitFailure ||
		!strings.Contains(errOut, "[y/N]") || !strings.Contains(errOut, "warning: no --reset-sql") {
		t.Errorf("rebuild answered no: %d %q", code, errOut)
	}
	piped := filepath.Join(t.TempDir(), "yes")
	if err := os.WriteFile(piped, []byte("y\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(piped)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	old := stdinOr
	stdinOr = func() io.Reader { return f }
	defer func() { stdinOr = old }()
	if code, _, errOut := cliRun(t, "--config", cfg, "projection", "rebuild", "giftwall"); code != ExitUsage ||
		!strings.Contains(errOut, "pass --yes") {
		t.Errorf("rebuild with stdin not a terminal: %d %q, want exit %d asking for --yes", code, errOut, ExitUsage)
	}
	var n int
	if err := s.DB().QueryRow("SELECT count(*) FROM wall").Scan(&n); err != nil || n != 3 {
		t.Errorf("the refused rebuilds changed the read model: %d rows (%v)", n, err)
	}
	if st, err := s.ProjectionStats(context.Background(), store.DefaultProjectionTable, "giftwall"); err != nil ||
		len(st) != 1 || st[0].Done+st[0].Failed+st[0].Dead != 4 {
		t.Errorf("the refused rebuilds changed the ledger: %+v (%v)", st, err)
	}
}
