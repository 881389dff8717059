package broker

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/heraldhq/herald"
)

// Template renders a lane's destination ("room.{event_type}") for an event.
// The placeholders are {topic}, {event_type}, {tenant}, {partition_key}
// and {header.NAME}, the event's header NAME (on a mapped table, a column
// carried by the lane's header_columns).
type Template struct {
	src   string
	parts []templatePart
}

type templatePart struct {
	literal string
	name    string // the placeholder's name, when field is set
	field   func(herald.Event) string
}

var templateFields = map[string]func(herald.Event) string{
	"topic":         func(e herald.Event) string { return e.Topic },
	"event_type":    func(e herald.Event) string { return e.Type },
	"tenant":        func(e herald.Event) string { return e.Tenant },
	"partition_key": func(e herald.Event) string { return e.PartitionKey },
}

// headerPlaceholder starts a placeholder that renders one event header.
const headerPlaceholder = "header."

// templateField returns what placeholder name renders: a fixed field, or
// an event header for "header.NAME".
func templateField(name string) (func(herald.Event) string, bool) {
	if h, ok := strings.CutPrefix(name, headerPlaceholder); ok && h != "" {
		return func(e herald.Event) string { return e.Headers[h] }, true
	}
	f, ok := templateFields[name]
	return f, ok
}

// ParseTemplate parses s, or returns an error naming an unknown placeholder
// or an unclosed brace.
func ParseTemplate(s string) (Template, error) {
	if s == "" {
		return Template{}, fmt.Errorf("destination template is empty")
	}
	t := Template{src: s}
	rest := s
	for rest != "" {
		open := strings.IndexByte(rest, '{')
		if open < 0 {
			if strings.IndexByte(rest, '}') >= 0 {
				return Template{}, fmt.Errorf("destination template %q has a '}' without '{'", s)
			}
			t.parts = append(t.parts, templatePart{literal: rest})
			break
		}
		if open > 0 {
			if strings.IndexByte(rest[:open], '}') >= 0 {
				return Template{}, fmt.Errorf("destination template %q has a '}' without '{'", s)
			}
			t.parts = append(t.parts, templatePart{literal: rest[:open]})
		}
		end := strings.IndexByte(rest[open:], '}')
		if end < 0 {
			return Template{}, fmt.Errorf("destination template %q has an unclosed '{'", s)
		}
		name := rest[open+1 : open+end]
		field, ok := templateField(name)
		if !ok {
			return Template{}, fmt.Errorf("destination template %q: unknown placeholder {%s} (want {topic}, {event_type}, {tenant}, {partition_key} or {header.NAME})", s, name)
		}
		t.parts = append(t.parts, templatePart{name: name, field: field})
		rest = rest[open+end+1:]
	}
	return t, nil
}

// String returns the template as written.
func (t Template) String() string { return t.src }

// UnmarshalText parses the template (so that YAML and JSON decode it); an
// empty text is the zero Template, which relay.New refuses as no
// destination.
func (t *Template) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*t = Template{}
		return nil
	}
	p, err := ParseTemplate(string(b))
	if err != nil {
		return err
	}
	*t = p
	return nil
}

// MarshalText returns the template as written.
func (t Template) MarshalText() ([]byte, error) { return []byte(t.src), nil }

// MustParseTemplate is ParseTemplate for constants; it panics on error.
func MustParseTemplate(s string) Template {
	t, err := ParseTemplate(s)
	if err != nil {
		panic(err)
	}
	return t
}

// Render returns the destination for ev.
func (t Template) Render(ev herald.Event) string {
	if len(t.parts) == 1 && t.parts[0].field == nil {
		return t.parts[0].literal
	}
	var b strings.Builder
	for _, p := range t.parts {
		if p.field != nil {
			b.WriteString(p.field(ev))
		} else {
			b.WriteString(p.literal)
		}
	}
	return b.String()
}

// HeaderNames returns the names of the template's {header.NAME}
// placeholders, in order.
func (t Template) HeaderNames() []string {
	var out []string
	for _, p := range t.parts {
		if h, ok := strings.CutPrefix(p.name, headerPlaceholder); ok {
			out = append(out, h)
		}
	}
	return out
}

// HasPlaceholders reports whether the template depends on the event.
func (t Template) HasPlaceholders() bool {
	for _, p := range t.parts {
		if p.field != nil {
			return true
		}
	}
	return false
}

// EmptyField returns the name of the first placeholder that ev leaves
// empty ("tenant" for "{tenant}.orders" and no tenant), or "" when every
// placeholder has a value. Such a destination cannot be right ("x..y", or
// nothing): the relay refuses the event rather than publish it there.
func (t Template) EmptyField(ev herald.Event) string {
	for _, p := range t.parts {
		if p.field != nil && p.field(ev) == "" {
			return p.name
		}
	}
	return ""
}

// Pattern returns the template with every placeholder replaced by
// wildcard, for subscribing to all the destinations a lane publishes to
// (NATS and AMQP topic patterns use "*" for one dot-separated token). ok
// is false when a placeholder shares a token with other text, which such a
// wildcard cannot match.
func (t Template) Pattern(wildcard string) (pattern string, ok bool) {
	var b strings.Builder
	ok = true
	for i, p := range t.parts {
		if p.field == nil {
			b.WriteString(p.literal)
			continue
		}
		before := i == 0 || strings.HasSuffix(t.parts[i-1].literal, ".")
		after := i == len(t.parts)-1 || strings.HasPrefix(t.parts[i+1].literal, ".")
		ok = ok && before && after
		b.WriteString(wildcard)
	}
	return b.String(), ok
}

// Regexp returns a regular expression matching every destination the
// template renders (placeholders match any non-empty text), for consumers
// that subscribe by pattern (Kafka).
func (t Template) Regexp() string {
	var b strings.Builder
	b.WriteString("^")
	for _, p := range t.parts {
		if p.field != nil {
			b.WriteString(".+")
		} else {
			b.WriteString(regexp.QuoteMeta(p.literal))
		}
	}
	b.WriteString("$")
	return b.String()
}

// LiteralPrefix is the template's text before its first placeholder (all
// of it when it has none): the part of a destination that every event
// shares, such as a webhook URL's scheme and host.
func (t Template) LiteralPrefix() string {
	var b strings.Builder
	for _, p := range t.parts {
		if p.field != nil {
			break
		}
		b.WriteString(p.literal)
	}
	return b.String()
}
