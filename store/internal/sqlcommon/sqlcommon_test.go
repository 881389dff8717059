package sqlcommon

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/heraldhq/herald/store"
)

func TestKeepOrdered(t *testing.T) {
	cands := []Candidate{
		{ID: 5, Tenant: "a", Key: "k"}, // after the outside blocker 3 of (a, k)
		{ID: 2, Tenant: "a", Key: "k"}, // before it
		{ID: 7, Tenant: "b", Key: "k"}, // same key, other tenant: not blocked
		{ID: 9, Key: ""},               // no key: never blocked
		{ID: 4, Tenant: "a", Key: "j"}, // after the outside blocker 1 of (a, j)
	}
	blockers := map[string]int64{OrderKey("a", "k"): 3, OrderKey("a", "j"): 1}
	got := KeepOrdered(cands, blockers)
	if want := []int64{2, 7, 9}; !slices.Equal(got, want) {
		t.Errorf("KeepOrdered = %v, want %v", got, want)
	}
	keys, maxID := Keys(cands)
	slices.Sort(keys)
	if !slices.Equal(keys, []string{"j", "k"}) || maxID != 9 {
		t.Errorf("Keys = %v, %d", keys, maxID)
	}
}

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

func TestMissing(t *testing.T) {
	if got := Missing([]int64{1, 2, 3}, []int64{3, 1}); !slices.Equal(got, []int64{2}) {
		t.Errorf("Missing = %v", got)
	}
	if got := Missing([]int64{1}, []int64{1}); got != nil {
		t.Errorf("Missing = %v, want nil", got)
	}
}

func TestDecodeHeaders(t *testing.T) {
	for in, want := range map[string]map[string]string{
		`{"a":"b","c":""}`: {"a": "b", "c": ""},
		`{}`:               nil,
		``:                 nil,
		`null`:             nil,
	} {
		got, err := DecodeHeaders(in)
		if err != nil || len(got) != len(want) {
			t.Errorf("DecodeHeaders(%q) = %v, %v; want %v", in, got, err, want)
			continue
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("DecodeHeaders(%q)[%q] = %q, want %q", in, k, got[k], v)
			}
		}
	}
}

// Rule: headers that are not a JSON object of strings are refused with a
// reason naming the problem, never altered into some headers.
func TestDecodeHeadersRefusesWhatIsNotAnObjectOfStrings(t *testing.T) {
	for in, why := range map[string]string{
		`not json`:           "not valid JSON",
		`{"a":"b"`:           "not valid JSON",
		`["not","object"]`:   "it is an array",
		`42`:                 "it is a number",
		`"text"`:             "it is a string",
		`true`:               "it is a boolean",
		`{"s":"x","n":1}`:    `header "n" is a number`,
		`{"o":{"p":"q"}}`:    `header "o" is an object`,
		`{"z":null,"a":[1]}`: `header "a" is an array`,
		`{"":"nameless"}`:    "a header has an empty name",
	} {
		got, err := DecodeHeaders(in)
		if err == nil || got != nil {
			t.Errorf("DecodeHeaders(%q) = %v, %v; want no headers and an error", in, got, err)
			continue
		}
		if msg := err.Error(); !strings.HasPrefix(msg, "headers is not a JSON object of strings: ") || !strings.Contains(msg, why) {
			t.Errorf("DecodeHeaders(%q) error %q does not say %q", in, msg, why)
		}
	}
}

func TestMigrationStatements(t *testing.T) {
	m := Migration{Version: 1, SQL: "-- a comment; with a semicolon\nCREATE TABLE {{table}} (a INT);\n\nCREATE INDEX i ON {{table}} (a);\n"}
	got := m.Statements("t1")
	want := []string{"CREATE TABLE t1 (a INT)", "CREATE INDEX i ON t1 (a)"}
	if !slices.Equal(got, want) {
		t.Errorf("Statements = %q, want %q", got, want)
	}
}

func TestRecordColumns(t *testing.T) {
	if got := RecordColumns(""); !strings.HasPrefix(got, "id, event_id, ") || !strings.HasSuffix(got, ", lease_owner") {
		t.Errorf("RecordColumns(\"\") = %q", got)
	}
	got := RecordColumns("t")
	if !strings.HasPrefix(got, "t.id, t.event_id, ") || !strings.HasSuffix(got, ", t.lease_owner") ||
		strings.Count(got, "t.") != len(recordColumns) {
		t.Errorf("RecordColumns(\"t\") = %q", got)
	}
}

func TestCheckClaim(t *testing.T) {
	bad := errors.New("bad claim")
	for _, p := range []store.ClaimParams{{Limit: 0, Lease: time.Second}, {Limit: 1, Lease: 0}} {
		if err := CheckClaim(p, bad); !errors.Is(err, bad) {
			t.Errorf("CheckClaim(%+v) = %v, want %v", p, err, bad)
		}
	}
	if err := CheckClaim(store.ClaimParams{Limit: 1, Lease: time.Second}, bad); err != nil {
		t.Errorf("CheckClaim of good parameters: %v", err)
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
