package daemon

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/heraldhq/herald/config"
	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store"
)

// advisingStore is a store whose only ability in use is Advice.
type advisingStore struct {
	store.Store
	advice []string
	err    error
	asked  []string
}

func (s *advisingStore) Advice(_ context.Context, tables []string) ([]string, error) {
	s.asked = tables
	return s.advice, s.err
}

// Rule: a store's advice is logged as warnings once it opens, asked for
// each lane table once; a store that cannot read it logs no warning.
func TestLogAdviceWarnsOncePerPiece(t *testing.T) {
	lanes := []config.Lane{{Name: "a", Table: "t1"}, {Name: "b", Table: "t2"}, {Name: "c", Table: "t1"}}
	st := &advisingStore{advice: []string{"autovacuum is off on this server: …", "second"}}
	var out strings.Builder
	logAdvice(context.Background(), st, lanes, slog.New(slog.NewTextHandler(&out, nil)))
	if want := []string{"t1", "t2"}; !slices.Equal(st.asked, want) {
		t.Errorf("asked about tables %v, want %v", st.asked, want)
	}
	logged := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(logged) != 2 || !strings.Contains(logged[0], "autovacuum is off") || !strings.Contains(logged[1], "second") {
		t.Fatalf("logged %q, want the two pieces of advice in order", logged)
	}
	for _, line := range logged {
		if !strings.Contains(line, "level=WARN") {
			t.Errorf("advice logged as %q, want a warning", line)
		}
	}

	failing := &advisingStore{advice: []string{"never shown"}, err: errors.New("no answer")}
	quiet := &testenv.LogLines{}
	logAdvice(context.Background(), failing, lanes, slog.New(quiet))
	if quiet.Count("never shown") != 0 {
		t.Error("advice logged although reading it failed")
	}
}
