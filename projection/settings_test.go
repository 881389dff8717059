package projection

import (
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/heraldhq/herald/backoff"
)

// Rule: a `projections` entry's keys fill the projector's Settings (the
// retry section its Backoff), and WithDefaults gives every unset setting
// the projector's default.
func TestSettingsFromYAMLWithDefaults(t *testing.T) {
	var p Projection
	err := yaml.Unmarshal([]byte(`{name: wall, source: {outbox: herald_outbox}, statements: ["SELECT 1"],
		workers: 2, retry: {initial: 2s}}`), &p)
	if err != nil {
		t.Fatal(err)
	}
	got := p.Settings.WithDefaults()
	want := Settings{Name: "wall", Table: "herald_projection_events", Workers: 2, MaxAttempts: 10,
		Backoff:   backoff.Policy{Initial: 2 * time.Second, Max: time.Minute, Jitter: backoff.JitterEqual},
		BatchSize: 64, ApplyBatch: 32, Lease: time.Minute, SweepInterval: 5 * time.Second}
	if got.Name != want.Name || got.Table != want.Table || got.Workers != want.Workers || got.MaxAttempts != want.MaxAttempts ||
		got.Backoff != want.Backoff || got.BatchSize != want.BatchSize || got.ApplyBatch != want.ApplyBatch ||
		got.Lease != want.Lease || got.SweepInterval != want.SweepInterval || got.DoneRetention != 0 {
		t.Fatalf("defaults:\n got %+v\nwant %+v", got, want)
	}
	if err := p.Validate("projections[0]"); err != nil {
		t.Fatalf("a good entry: %v", err)
	}
	// A max below initial is raised to it.
	if b := (Settings{Backoff: backoff.Policy{Initial: time.Minute, Max: time.Second}}).WithDefaults().Backoff; b.Max != time.Minute {
		t.Fatalf("max below initial: %+v, want max raised to 1m", b)
	}
}

// Rule: every bad setting is reported, each by its key path.
func TestValidateNamesEveryKey(t *testing.T) {
	p := Projection{
		Settings: Settings{Name: strings.Repeat("n", 65), Table: "a b", ExcludeTypes: []string{"A", ""},
			Workers: -1, MaxAttempts: -2, Backoff: backoff.Policy{Initial: -time.Second, Jitter: "some"},
			DoneRetention: -time.Hour},
		Source:     Source{Broker: "b"},
		Statements: []string{"SELECT :nope"},
	}
	err := p.Validate("projections[3]")
	if err == nil {
		t.Fatal("no error")
	}
	for _, key := range []string{"name", "table", "exclude_types[1]", "workers", "max_attempts", "retry.initial",
		"retry.jitter", "done_retention", "source.destination", "statements[0]"} {
		if !strings.Contains(err.Error(), "projections[3]."+key+":") {
			t.Errorf("no error for projections[3].%s in:\n%v", key, err)
		}
	}
	if !strings.Contains(err.Error(), `retry.jitter: "some" is not one of full, equal, none`) {
		t.Errorf("jitter error does not name the modes:\n%v", err)
	}
}
