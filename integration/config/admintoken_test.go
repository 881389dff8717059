package config

import (
	"strings"
	"testing"
)

// Rule: admin.token comes from the file or HERALD_ADMIN_TOKEN (which wins),
// and config print never shows it.
func TestAdminToken(t *testing.T) {
	if f := mustParse(t, "admin: {token: from-file}\n"); f.Admin.Token != "from-file" || f.Admin.Addr == "" {
		t.Fatalf("admin.token from the file: %+v", f.Admin)
	}
	t.Setenv("HERALD_ADMIN_TOKEN", "from-env")
	f := mustParse(t, "admin: {token: from-file}\n")
	if f.Admin.Token != "from-env" {
		t.Fatalf("HERALD_ADMIN_TOKEN must win: %q", f.Admin.Token)
	}
	out, err := f.Print()
	if err != nil || strings.Contains(string(out), "from-env") || !strings.Contains(string(out), "token: xxxxx") {
		t.Fatalf("config print must redact the token:\n%s (%v)", out, err)
	}
}
