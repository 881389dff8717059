// Package redact hides passwords in the URLs and DSNs that reach logs,
// errors and printed config. It imports nothing of Herald, so that stores,
// brokers and the config loader can all use it.
package redact

import (
	"net/url"
	"regexp"
	"strings"
)

// passwordParam matches password-like parameters in key=value DSNs
// ("password=x", "pass=x") and URL queries.
var passwordParam = regexp.MustCompile(`(?i)\b(password|passwd|pass|pwd|token|secret)=[^\s&;]*`)

// DSN hides every password in a URL or DSN, in the forms we know:
// user:pass@ in URLs and MySQL DSNs, key=value parameters, and several
// comma-separated URLs. Whatever reaches a log, an error or an API goes
// through it.
func DSN(dsn string) string {
	parts := strings.Split(dsn, ",")
	for i, p := range parts {
		parts[i] = redactOne(p)
	}
	return passwordParam.ReplaceAllString(strings.Join(parts, ","), "$1=xxxxx")
}

func redactOne(s string) string {
	if u, err := url.Parse(s); err == nil && u.User != nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
			return strings.Replace(u.String(), "xxxxx", "xxxxx", 1)
		}
		return s
	}
	// MySQL form: user:pass@tcp(host)/db, and anything url.Parse refused.
	at := strings.LastIndex(s, "@")
	if at < 0 {
		return s
	}
	cred := s[:at]
	start := strings.LastIndex(cred, "//") // scheme://user:pass@ that failed to parse
	if start >= 0 {
		start += 2
	} else {
		start = 0
	}
	if colon := strings.Index(cred[start:], ":"); colon >= 0 {
		return s[:start+colon+1] + "xxxxx" + s[at:]
	}
	return s
}

// Hidden replaces a secret in printed config.
const Hidden = "xxxxx"

// IfSet returns Hidden for a secret that is set, and "" for one that is not
// (so that printed config still shows which secrets are missing).
func IfSet(secret string) string {
	if secret == "" {
		return ""
	}
	return Hidden
}
