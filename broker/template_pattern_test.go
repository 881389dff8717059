package broker

import (
	"regexp"
	"testing"
)

// Rule: a template's pattern replaces placeholders by a wildcard and says
// when one shares a token; its regexp matches what it renders.
func TestTemplatePatternAndRegexp(t *testing.T) {
	for tpl, want := range map[string]struct {
		pattern string
		ok      bool
	}{
		"herald.{topic}":             {"herald.*", true},
		"room.{tenant}.{event_type}": {"room.*.*", true},
		"x-{topic}":                  {"x-*", false},
		"plain":                      {"plain", true},
	} {
		p, ok := MustParseTemplate(tpl).Pattern("*")
		if p != want.pattern || ok != want.ok {
			t.Errorf("%s: pattern %q %v, want %q %v", tpl, p, ok, want.pattern, want.ok)
		}
	}
	re := regexp.MustCompile(MustParseTemplate("t.{topic}-v1").Regexp())
	if !re.MatchString("t.wallet-v1") || re.MatchString("t.-v1") || re.MatchString("xt.wallet-v1") {
		t.Errorf("regexp %s matches wrongly", re)
	}
}
