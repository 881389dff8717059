package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// Rule: a lane's settings are checked by `config check`, not first by
// `herald run`: fair_tenants on a lane limited to one tenant exits 2
// naming the key path.
func TestConfigCheckRefusesFairTenantsWithTenant(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "fair.yaml")
	writeFile(t, bad, "lanes:\n  - {name: shop, destination: x, tenant: t1, fair_tenants: true}\n")
	code, _, e := cliRun(t, "config", "check", "--config", bad)
	if code != ExitUsage || !strings.Contains(e, "lanes[0] (shop).fair_tenants:") {
		t.Fatalf("config check on fair_tenants with tenant: exit %d, want %d naming lanes[0] (shop).fair_tenants: %q", code, ExitUsage, e)
	}
}
