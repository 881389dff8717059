package config

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/heraldhq/herald/broker"
)

// keyError is one unknown key, named by its path in the file.
type keyError struct {
	line    int
	path    string
	suggest string
}

func (e keyError) Error() string {
	msg := fmt.Sprintf("line %d: %s: unknown key", e.line, e.path)
	if e.suggest != "" {
		msg += ", did you mean " + e.suggest + "?"
	}
	return msg
}

// checkKeys walks a YAML node against the Go type it will be decoded into
// and returns one error per key the type does not have, each with its path
// (lanes[0].batchsize) and the closest known key. Decoding with yaml's
// KnownFields names only the Go type and the first bad key; this names
// them all in the file's own terms.
func (d Drivers) checkKeys(n *yaml.Node, t reflect.Type, path string) []error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n == nil {
		return nil
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	switch {
	case t == durationType:
		return checkDuration(n, path)
	case t == templateType:
		return checkTemplate(n, path)
	case t == reflect.TypeOf(Broker{}):
		return d.checkBrokerKeys(n, path)
	case t == reflect.TypeOf(Store{}):
		return d.checkStoreKeys(n, path)
	case t.Kind() == reflect.Struct && n.Kind == yaml.MappingNode && !isScalarType(t):
		return d.checkStructKeys(n, yamlFields(t), path)
	case t.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode:
		var errs []error
		for i, item := range n.Content {
			errs = append(errs, d.checkKeys(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i))...)
		}
		return errs
	case t.Kind() == reflect.Map && n.Kind == yaml.MappingNode:
		var errs []error
		for i := 0; i+1 < len(n.Content); i += 2 {
			errs = append(errs, d.checkKeys(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value))...)
		}
		return errs
	}
	return nil // scalars, and shapes yaml's decoder will refuse with its own error
}

var (
	durationType = reflect.TypeOf(time.Duration(0))
	templateType = reflect.TypeOf(broker.Template{})
)

// checkDuration checks a duration scalar ("5s", or 0) in the file's terms,
// where yaml's decoder would say only that it cannot unmarshal it; it
// writes 0 as "0s", which the decoder reads.
func checkDuration(n *yaml.Node, path string) []error {
	if n.Kind != yaml.ScalarNode {
		return []error{fmt.Errorf("line %d: %s: a duration must be a string such as \"5s\"", n.Line, path)}
	}
	if n.Value == "0" {
		n.Value, n.Tag = "0s", "!!str"
		return nil
	}
	v, err := time.ParseDuration(n.Value)
	switch {
	case err != nil:
		return []error{fmt.Errorf("line %d: %s: %q is not a duration (use e.g. \"500ms\", \"5s\", \"2m\", \"720h\")", n.Line, path, n.Value)}
	case v < 0:
		return []error{fmt.Errorf("line %d: %s: duration %q is negative", n.Line, path, n.Value)}
	}
	return nil
}

// checkTemplate checks a destination template; an empty one is left to
// validate, which says a lane needs one.
func checkTemplate(n *yaml.Node, path string) []error {
	if n.Kind != yaml.ScalarNode {
		return []error{fmt.Errorf("line %d: %s: a destination must be a string such as \"herald.{topic}\"", n.Line, path)}
	}
	if n.Value == "" {
		return nil
	}
	if _, err := broker.ParseTemplate(n.Value); err != nil {
		return []error{fmt.Errorf("line %d: %s: %w", n.Line, path, err)}
	}
	return nil
}

// isScalarType reports struct types written as one YAML scalar.
func isScalarType(t reflect.Type) bool {
	_, custom := reflect.New(t).Interface().(yaml.Unmarshaler)
	return custom && t != reflect.TypeOf(Broker{}) && t != reflect.TypeOf(Store{})
}

func (d Drivers) checkStructKeys(n *yaml.Node, fields map[string]reflect.Type, path string) []error {
	var errs []error
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		ft, ok := fields[k.Value]
		if !ok {
			errs = append(errs, keyError{line: k.Line, path: join(path, k.Value), suggest: closest(k.Value, fields)})
			continue
		}
		errs = append(errs, d.checkKeys(n.Content[i+1], ft, join(path, k.Value))...)
	}
	return errs
}

// checkBrokerKeys checks a broker entry against `type` and its driver's
// config; an unknown type is left to the decoder, which lists the known ones.
func (d Drivers) checkBrokerKeys(n *yaml.Node, path string) []error {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	drv := d.broker(mappingValue(n, "type"))
	if drv == nil {
		return nil
	}
	fields := yamlFields(reflect.TypeOf(drv.NewConfig()).Elem())
	fields["type"] = reflect.TypeOf("")
	return d.checkStructKeys(n, fields, path)
}

// checkStoreKeys checks the store section against the common keys and
// those of every store driver: a key of another driver than the one named
// is ignored, as it always was, so that a file whose driver the
// environment overrides (HERALD_STORE_DRIVER) keeps working.
func (d Drivers) checkStoreKeys(n *yaml.Node, path string) []error {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	fields := yamlFields(reflect.TypeOf(storeKeys{}))
	for _, drv := range d.Stores {
		for k, v := range yamlFields(reflect.TypeOf(drv.NewConfig()).Elem()) {
			fields[k] = v
		}
	}
	return d.checkStructKeys(n, fields, path)
}

// yamlFields maps each YAML key of struct t (inline structs flattened) to
// its field's type.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	fields := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") {
			for k, v := range yamlFields(f.Type) {
				fields[k] = v
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		fields[name] = f.Type
	}
	return fields
}

// closest returns the known key nearest to k (same letters without
// underscores, or at most two edits away), or "".
func closest(k string, known map[string]reflect.Type) string {
	names := make([]string, 0, len(known))
	for name := range known {
		names = append(names, name)
	}
	sort.Strings(names)
	flat := func(s string) string { return strings.ReplaceAll(strings.ToLower(s), "_", "") }
	best, bestDist := "", 3
	for _, name := range names {
		if flat(name) == flat(k) {
			return name
		}
		if d := editDistance(strings.ToLower(k), name); d < bestDist {
			best, bestDist = name, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// mappingValue returns the scalar value of key in mapping n, or "".
func mappingValue(n *yaml.Node, key string) string {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1].Value
		}
	}
	return ""
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
