package sqlscan

import (
	"strings"
	"testing"
)

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
