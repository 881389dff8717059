package sqlbuild

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/heraldhq/herald/store"
)

func TestRebindAndMarks(t *testing.T) {
	if got := Rebind("a = ? AND b IN (" + Marks(3) + ")"); got != "a = $1 AND b IN ($2, $3, $4)" {
		t.Errorf("Rebind = %q", got)
	}
	if Marks(0) != "" {
		t.Error("Marks(0) is not empty")
	}
}

func TestScopeWhere(t *testing.T) {
	q, args := ScopeWhere(store.Scope{Tenant: "t", IncludeTypes: []string{"A", "B"}, ExcludeTypes: []string{"C"}}, "r")
	if q != " AND r.tenant = ? AND r.event_type IN (?, ?) AND r.event_type NOT IN (?)" || len(args) != 4 {
		t.Errorf("ScopeWhere = %q %v", q, args)
	}
	if q, args := ScopeWhere(store.Scope{}, ""); q != "" || len(args) != 0 {
		t.Errorf("empty scope: %q %v", q, args)
	}
}

func TestTrimError(t *testing.T) {
	long := strings.Repeat("é", store.MaxErrorLength) // 2 bytes each
	got := TrimError(long)
	if len(got) > store.MaxErrorLength || !utf8.ValidString(got) {
		t.Errorf("TrimError kept %d bytes, valid %v", len(got), utf8.ValidString(got))
	}
	if got := TrimError("a\x00b\xffc"); got != "ab\uFFFDc" {
		t.Errorf("TrimError = %q: NUL must go, invalid UTF-8 must be replaced", got)
	}
}

func TestUnselectedWhere(t *testing.T) {
	within := store.Scope{Table: "t", Tenant: "a"}
	lanes := []store.Scope{{Table: "t", IncludeTypes: []string{"X"}}, {Table: "t"}}
	q, args, err := UnselectedWhere(within, lanes, "o")
	if err != nil || q != " AND o.tenant = ? AND NOT (1 = 1 AND o.event_type IN (?)) AND NOT (1 = 1)" || len(args) != 2 {
		t.Errorf("UnselectedWhere = %q %v %v", q, args, err)
	}
	if _, _, err := UnselectedWhere(within, []store.Scope{{Table: "u"}}, ""); err == nil || !strings.Contains(err.Error(), `"u"`) {
		t.Errorf("a lane on another table: err %v, want one naming it", err)
	}
}
