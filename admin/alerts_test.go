package admin

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/heraldhq/herald/internal/testenv"
)

// Rule: the shipped Prometheus alert rules are valid and fire on the series
// their unit tests give (promtool, from Debian's prometheus package).
func TestAlertRules(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		testenv.Unavailable(t, "promtool is not installed", err)
	}
	dir := filepath.Join("..", "deploy", "prometheus")
	for _, args := range [][]string{{"check", "rules", "herald-alerts.yml"}, {"test", "rules", "herald-alerts_test.yml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("promtool %v: %v\n%s", args, err, out)
		}
	}
}
