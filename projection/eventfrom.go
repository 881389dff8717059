package projection

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/theory/jsonpath"

	"github.com/heraldhq/herald"
)

// EventFrom says where a projection reads an event's attributes when its
// messages do not all carry Herald's (CloudEvents headers or envelope):
// messages an existing service's own worker published, whose id is a field
// of the body. With the id read from the same body field in both, the old
// worker's messages and Herald's are deduplicated in one ledger. A zero
// Field keeps the attribute the broker binding decoded.
type EventFrom struct {
	// ID is the event id, the dedupe key. A message whose configured id is
	// missing, null or empty fails (dead, the reason naming the source).
	ID Field `yaml:"id"`
	// Type is the event type; required and not empty like the id.
	Type Field `yaml:"type"`
	// Tenant and Key (the partition key) may be empty, not missing.
	Tenant Field `yaml:"tenant"`
	Key    Field `yaml:"key"`
	// Time is when the event happened: a number is Unix milliseconds, a
	// string RFC 3339.
	Time Field `yaml:"time"`
}

// Field is one attribute's source: a JSONPath into the message body or a
// header (a broker property) by name, not both.
type Field struct {
	// Path is an RFC 9535 JSONPath singular query into the body: $.eventId,
	// $.meta.id, $['event-id'], $.ids[0]. Strings are taken as they are,
	// numbers as their decimal text.
	Path string `yaml:"path"`
	// Header is a message header's exact name (a user header: Herald's own
	// ce- attributes are the default already).
	Header string `yaml:"header"`
}

// IsZero reports whether e changes nothing.
func (e EventFrom) IsZero() bool { return e == EventFrom{} }

// fields names e's fields in key-path order.
func (e EventFrom) fields() []namedField {
	return []namedField{{"id", e.ID}, {"type", e.Type}, {"tenant", e.Tenant}, {"key", e.Key}, {"time", e.Time}}
}

type namedField struct {
	name string
	Field
}

// Validate checks e; path is its key path ("projections[0].event_from").
func (e EventFrom) Validate(path string) error {
	_, err := e.Compile(path)
	return err
}

// Compile checks e and returns its Resolver; errors name the key path
// under path.
func (e EventFrom) Compile(path string) (*Resolver, error) {
	r := &Resolver{}
	for _, f := range e.fields() {
		s, err := f.compile()
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", path, f.name, err)
		}
		r.sources = append(r.sources, s)
	}
	return r, nil
}

// compile parses the field's path; a zero Field compiles to a nil source.
func (f namedField) compile() (*source, error) {
	switch {
	case f.Path != "" && f.Header != "":
		return nil, errors.New("give path or header, not both")
	case f.Header != "":
		return &source{attr: f.name, header: f.Header}, nil
	case f.Path == "":
		return nil, nil
	}
	p, err := jsonpath.Parse(f.Path)
	if err != nil {
		return nil, fmt.Errorf("path %q: %w", f.Path, err)
	}
	if p.Query().Singular() == nil {
		return nil, fmt.Errorf("path %q selects more than one value: want a singular query of names and indexes, such as $.eventId", f.Path)
	}
	return &source{attr: f.name, path: p, text: f.Path}, nil
}

// Resolver sets an event's attributes from its message per an EventFrom.
type Resolver struct {
	sources []*source // id, type, tenant, key, time; nil where not configured
}

// source is one configured attribute's path or header.
type source struct {
	attr   string
	path   *jsonpath.Path
	text   string // the path as configured, for errors
	header string
}

// ErrAttribute is wrapped by every AttributeError.
var ErrAttribute = errors.New("projection: the message lacks a configured attribute")

// AttributeError is a configured attribute the message lacks (or whose
// value does not fit): the message's failure, never a silent default.
type AttributeError struct {
	// Attribute is "id", "type", "tenant", "key" or "time".
	Attribute string
	// Source is the path ($.eventId) or `header "NAME"`.
	Source string
	// Reason says what is wrong with the value.
	Reason string
}

func (e *AttributeError) Error() string {
	return fmt.Sprintf("event %s from %s: %s", e.Attribute, e.Source, e.Reason)
}

// Unwrap returns ErrAttribute.
func (e *AttributeError) Unwrap() error { return ErrAttribute }

// Resolve returns ev with the configured attributes taken from its body
// and headers. On an error (a configured attribute missing, or an id or
// type empty) the attributes that did resolve are set, the id only when it
// resolved, and the error names the attribute and its source.
func (r *Resolver) Resolve(ev herald.Event) (herald.Event, error) {
	if r == nil {
		return ev, nil
	}
	var (
		doc     any
		decoded bool
		errs    []error
	)
	for _, s := range r.sources {
		if s == nil {
			continue
		}
		if s.path != nil && !decoded {
			decoded = true
			dec := json.NewDecoder(bytes.NewReader(ev.Payload))
			dec.UseNumber()
			if err := dec.Decode(&doc); err != nil {
				return ev, s.fail("the body is not JSON: " + err.Error())
			}
		}
		if err := s.set(&ev, doc); err != nil {
			errs = append(errs, err)
		}
	}
	return ev, errors.Join(errs...)
}

// fail returns the AttributeError of the source for reason.
func (s *source) fail(reason string) error {
	src := fmt.Sprintf("header %q", s.header)
	if s.path != nil {
		src = s.text
	}
	return &AttributeError{Attribute: s.attr, Source: src, Reason: reason}
}

// set reads the source's value and sets its attribute on ev.
func (s *source) set(ev *herald.Event, doc any) error {
	v, err := s.value(ev, doc)
	if err != nil {
		return s.fail(err.Error())
	}
	switch s.attr {
	case "id", "type":
		if v == "" {
			return s.fail("is empty")
		}
		if s.attr == "id" {
			ev.ID = v
		} else {
			ev.Type = v
		}
	case "tenant":
		ev.Tenant = v
	case "key":
		ev.PartitionKey = v
	case "time":
		t, err := parseTime(v)
		if err != nil {
			return s.fail(err.Error())
		}
		ev.CreatedAt = t
	}
	return nil
}

// value returns the source's value as text: a header's value, or the
// body's string, number (decimal text) or null (empty).
func (s *source) value(ev *herald.Event, doc any) (string, error) {
	if s.path == nil {
		v, ok := ev.Headers[s.header]
		if !ok {
			return "", errors.New("the message has no such header")
		}
		return v, nil
	}
	nodes := s.path.Select(doc)
	if len(nodes) == 0 {
		return "", errors.New("the body has no value there")
	}
	switch v := nodes[0].(type) {
	case string:
		return v, nil
	case json.Number:
		return v.String(), nil
	case nil:
		return "", nil
	case bool:
		return "", errors.New("the value is a boolean, want a string or a number")
	case []any:
		return "", errors.New("the value is an array, want a string or a number")
	default:
		return "", errors.New("the value is an object, want a string or a number")
	}
}

// parseTime reads Unix milliseconds (an integer) or RFC 3339; empty is
// the zero time.
func parseTime(v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if ms, err := strconv.ParseInt(v, 10, 64); err == nil {
		return time.UnixMilli(ms), nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither Unix milliseconds nor RFC 3339", v)
	}
	return t, nil
}

// Failed reports whether err (from Resolve) says attribute attr ("id",
// "type", "tenant", "key", "time") could not be read.
func Failed(err error, attr string) bool {
	if err == nil {
		return false
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if Failed(e, attr) {
				return true
			}
		}
		return false
	}
	var ae *AttributeError
	return errors.As(err, &ae) && ae.Attribute == attr
}
