package cli

import (
	"strings"
	"testing"
)

// Rule: a lane name no lane has, given on the command line, is a usage
// error (exit 2) that names it and lists the configured lanes, not an
// invalid config; the database is not needed to say so.
func TestUnknownLaneIsAUsageError(t *testing.T) {
	cfg := writeConfig(t, t.TempDir(), "  - {name: second, table: second_outbox, destination: \"y.{topic}\"}\n")
	const want = `no lane "nosuch" (configured: main, second)`
	for _, args := range [][]string{
		{"lane", "pause", "nosuch"},
		{"lane", "resume", "nosuch"},
		{"dead", "list", "--lane", "nosuch"},
		{"dead", "replay", "--all", "--lane", "nosuch"},
		{"replay", "--all", "--lane", "nosuch"},
		{"enqueue", "--type", "T", "--lane", "nosuch"},
		{"tail", "nosuch"},
	} {
		code, _, e := cliRun(t, append(args, "--config", cfg)...)
		if code != ExitUsage || !strings.Contains(e, want) || strings.Contains(e, "invalid config") {
			t.Errorf("herald %s: exit %d, stderr %q; want exit %d saying %s, not invalid config",
				strings.Join(args, " "), code, e, ExitUsage, want)
		}
	}
}
