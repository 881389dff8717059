package config

import "github.com/heraldhq/herald/redact"

// Redact hides every password in a URL or DSN (redact.DSN); kept here for
// the programs that call it through config.
func Redact(dsn string) string { return redact.DSN(dsn) }
