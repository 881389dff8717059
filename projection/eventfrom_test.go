package projection

import (
	"strings"
	"testing"

	"github.com/heraldhq/herald"
)

// TestResolveValues: strings as they are, numbers as their decimal text,
// null as empty (not for the id), RFC 3339 or Unix ms times; objects,
// arrays, missing values and a body that is not JSON are errors naming the
// attribute and its path.
func TestResolveValues(t *testing.T) {
	r, err := EventFrom{ID: Field{Path: "$.id"}, Type: Field{Path: "$['event-type']"}, Tenant: Field{Path: "$.t"},
		Key: Field{Path: "$.user.ids[1]"}, Time: Field{Path: "$.at"}}.Compile("x")
	if err != nil {
		t.Fatal(err)
	}
	ev, err := r.Resolve(herald.Event{ID: "pos", Payload: []byte(
		`{"id":12345678901234567890,"event-type":"A","t":null,"user":{"ids":[1,1003]},"at":"2026-01-02T03:04:05Z"}`)})
	if err != nil || ev.ID != "12345678901234567890" || ev.Type != "A" || ev.Tenant != "" || ev.PartitionKey != "1003" ||
		ev.CreatedAt.Unix() != 1767323045 {
		t.Errorf("got %+v, %v", ev, err)
	}
	for body, want := range map[string]string{
		`{"id":{"a":1},"event-type":"A","t":"","user":{"ids":[1,2]},"at":1}`: "event id from $.id: the value is an object",
		`{"id":"e","event-type":"A","t":"","user":{"ids":[1]},"at":1}`:       "event key from $.user.ids[1]: the body has no value there",
		`{"id":"e","event-type":"A","t":"","user":{"ids":[1,2]},"at":true}`:  "event time from $.at: the value is a boolean",
		`{"id":null,"event-type":"A","t":"","user":{"ids":[1,2]},"at":"x"}`:  "event id from $.id: is empty",
		`not json`: "event id from $.id: the body is not JSON",
	} {
		ev, err := r.Resolve(herald.Event{ID: "pos", Payload: []byte(body)})
		if err == nil || !strings.Contains(err.Error(), want) || !Failed(err, strings.Fields(want)[1]) {
			t.Errorf("%s: got %v, want an error saying %q", body, err, want)
		}
		if strings.Contains(want, "event id") && ev.ID != "pos" {
			t.Errorf("%s: id %q, want the message's own id kept", body, ev.ID)
		}
	}
}
