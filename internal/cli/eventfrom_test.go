package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Rule: a projection's event_from that names a path and a header for one
// attribute, or a path that is not a singular JSONPath query, is refused
// by `herald config check` (and so at `herald run`'s load) with exit 2 and
// the key path.
func TestConfigCheckRefusesBadEventFrom(t *testing.T) {
	dir := t.TempDir()
	for entry, want := range map[string]string{
		`{id: {path: $.eventId, header: x-id}}`:        "projections[0].event_from.id: give path or header, not both",
		`{id: {path: $.eventId}, type: {path: "$.["}}`: `projections[0].event_from.type: path "$.["`,
		`{id: {path: "$..eventId"}}`:                   "projections[0].event_from.id: path \"$..eventId\" selects more than one value",
	} {
		cfg := filepath.Join(dir, "herald.yaml")
		yaml := "store: {driver: sqlite, dsn: " + filepath.Join(dir, "h.db") + "}\n" +
			"brokers:\n  out: {type: stdout}\nlanes:\n  - {name: a, destination: x, broker: out}\n" +
			"projections:\n  - name: wall\n    source: {outbox: herald_outbox}\n    statements: [\"SELECT 1\"]\n" +
			"    event_from: " + entry + "\n"
		if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		if code, out, e := cliRun(t, "config", "check", "--config", cfg); code != 2 || !strings.Contains(e, want) {
			t.Errorf("event_from %s: exit %d, want 2 naming %q:\n%s%s", entry, code, want, out, e)
		}
	}
}
