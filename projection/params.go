package projection

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/heraldhq/herald"
)

// Statement is one configured SQL statement bound to a dialect: the SQL
// with placeholders, and for each placeholder the event value it takes.
type Statement struct {
	// SQL is the statement with the dialect's placeholders.
	SQL string
	// Params are the named parameters in placeholder order.
	Params []string
}

// paramName is a parameter after its colon: event.id, header.NAME,
// payload.a.b.0.c.
var paramName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_-]+)*`)

// eventFields are the event attributes a statement can name.
var eventFields = map[string]bool{"id": true, "type": true, "tenant": true, "key": true, "topic": true, "time_ms": true}

// Compile turns a statement with named parameters (:event.id, :event.type,
// :event.tenant, :event.key, :event.topic, :event.time_ms, :header.NAME,
// :payload.PATH) into d's SQL. Each occurrence becomes a placeholder of its
// own. Colons inside quotes ('…', "…", `…`) and PostgreSQL casts (::type)
// are left alone. An unknown parameter is an error naming it.
func Compile(query string, d herald.Dialect) (Statement, error) {
	var b strings.Builder
	var out Statement
	var quote byte
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"' || c == '`':
			quote = c
		case c == ':' && i+1 < len(query) && query[i+1] == ':':
			b.WriteString("::")
			i++
			continue
		case c == ':':
			name := paramName.FindString(query[i+1:])
			if name == "" {
				break
			}
			if err := checkParam(name); err != nil {
				return Statement{}, err
			}
			out.Params = append(out.Params, name)
			b.WriteString(d.Placeholder(len(out.Params)))
			i += len(name)
			continue
		}
		b.WriteByte(c)
	}
	if quote != 0 {
		return Statement{}, fmt.Errorf("unterminated %c quote", quote)
	}
	if len(out.Params) == 0 && strings.TrimSpace(query) == "" {
		return Statement{}, fmt.Errorf("empty statement")
	}
	out.SQL = b.String()
	return out, nil
}

// checkParam refuses a parameter no event has.
func checkParam(name string) error {
	root, rest, _ := strings.Cut(name, ".")
	switch {
	case root == "event" && eventFields[rest]:
		return nil
	case (root == "header" || root == "payload") && rest != "":
		return nil
	}
	return fmt.Errorf(":%s: want :event.(id|type|tenant|key|topic|time_ms), :header.NAME or :payload.PATH", name)
}

// Args returns the statement's arguments from ev. A header or payload path
// the event lacks is an error naming it (the event's failure: retried,
// then dead with that reason).
func (s Statement) Args(ev herald.Event) ([]any, error) {
	args := make([]any, len(s.Params))
	var doc any
	for i, name := range s.Params {
		root, rest, _ := strings.Cut(name, ".")
		switch root {
		case "event":
			args[i] = eventField(ev, rest)
		case "header":
			v, ok := ev.Headers[rest]
			if !ok {
				return nil, fmt.Errorf(":%s: the event has no header %q", name, rest)
			}
			args[i] = v
		case "payload":
			if doc == nil {
				dec := json.NewDecoder(bytes.NewReader(ev.Payload))
				dec.UseNumber()
				if err := dec.Decode(&doc); err != nil {
					return nil, fmt.Errorf(":%s: the payload is not JSON: %v", name, err)
				}
			}
			v, err := lookup(doc, strings.Split(rest, "."))
			if err != nil {
				return nil, fmt.Errorf(":%s: %w", name, err)
			}
			args[i] = v
		}
	}
	return args, nil
}

func eventField(ev herald.Event, f string) any {
	switch f {
	case "id":
		return ev.ID
	case "type":
		return ev.Type
	case "tenant":
		return ev.Tenant
	case "key":
		return ev.PartitionKey
	case "topic":
		return ev.Topic
	}
	if ev.CreatedAt.IsZero() {
		return nil
	}
	return ev.CreatedAt.UnixMilli()
}

// lookup follows path through objects (by key) and arrays (by index) and
// returns the value as a driver argument: a string, an int64 or float64, a
// bool, nil for null, or an object or array as its JSON text.
func lookup(doc any, path []string) (any, error) {
	cur := doc
	for i, p := range path {
		switch v := cur.(type) {
		case map[string]any:
			next, ok := v[p]
			if !ok {
				return nil, fmt.Errorf("the payload has no %q", strings.Join(path[:i+1], "."))
			}
			cur = next
		case []any:
			n, err := strconv.Atoi(p)
			if err != nil || n < 0 || n >= len(v) {
				return nil, fmt.Errorf("the payload has no element %q", strings.Join(path[:i+1], "."))
			}
			cur = v[n]
		default:
			return nil, fmt.Errorf("the payload has no %q (%q is not an object or array)",
				strings.Join(path[:i+1], "."), strings.Join(path[:i], "."))
		}
	}
	switch v := cur.(type) {
	case json.Number:
		if n, err := v.Int64(); err == nil {
			return n, nil
		}
		return v.Float64()
	case map[string]any, []any:
		b, err := json.Marshal(v)
		return string(b), err
	}
	return cur, nil // string, bool or nil
}
