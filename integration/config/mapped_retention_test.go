package config

import (
	"errors"
	. "github.com/heraldhq/herald/config"
	"strings"
	"testing"
)

// Rule: retention is accepted on a mapped lane; retention.active (pending
// rows aged by created_at) is refused when the mapping has no created_at
// column, naming the key.
func TestAdoptMappedRetention(t *testing.T) {
	kept := strings.Replace(walletLane, "time_unit: epoch_ms", "time_unit: epoch_ms\n    retention: {delivered: 24h, dead: 168h, active: 720h}", 1)
	if _, err := parse([]byte(kept), "test.yaml"); err != nil {
		t.Fatalf("retention on a mapped lane: %v", err)
	}
	noCreated := strings.Replace(kept, "created_at: created_at_ms, ", "", 1)
	_, err := parse([]byte(noCreated), "test.yaml")
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "lanes[0] (wallet).retention.active: needs columns.created_at") {
		t.Fatalf("retention.active without created_at: %v", err)
	}
}
