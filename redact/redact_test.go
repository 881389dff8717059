package redact

import (
	"strings"
	"testing"
)

// Rule (F24): no form of a DSN keeps its password once redacted.
func TestRedactHidesEveryPasswordForm(t *testing.T) {
	const canary = "S3cr3tCanary"
	for _, dsn := range []string{
		"postgres://app:" + canary + "@127.0.0.1:5432/test?sslmode=disable",
		"postgres://app:" + canary + "@127.0.0.1:badport/test",
		"app:" + canary + "@tcp(127.0.0.1:3306)/test?parseTime=true",
		"app:" + canary + "@weird@tcp(127.0.0.1:3306)/test",
		"host=127.0.0.1 user=app password=" + canary + " dbname=test",
		"postgres://127.0.0.1/test?password=" + canary,
		"nats://u:" + canary + "@127.0.0.1:4222,nats://u:" + canary + "@127.0.0.1:4223",
	} {
		if got := DSN(dsn); strings.Contains(got, canary) {
			t.Errorf("DSN(%q) = %q still holds the password", dsn, got)
		}
	}
	if got := DSN("nats://127.0.0.1:4222"); got != "nats://127.0.0.1:4222" {
		t.Errorf("a URL without credentials must stay as is, got %q", got)
	}
}
