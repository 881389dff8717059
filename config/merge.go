package config

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// mergeOver lays the file's document over the built-in defaults, so a file
// may set a single key and keep every other default:
//   - mappings merge key by key, recursively;
//   - a mapping that names its kind (`type` of a broker, `driver` of the
//     store) replaces the default it lands on whole: it describes a store or
//     broker of its own, so a MySQL store inherits no SQLite file name and a
//     NATS broker with a url no embedded server; one that names no kind
//     (`brokers: {default: {embedded: {port: 4300}}}`) merges into it;
//   - sequences (lanes, subjects) and scalars replace.
//
// Both nodes are the documents' root mappings; file may be nil (an empty
// file). The defaults node is modified and returned.
func mergeOver(defaults, file *yaml.Node) *yaml.Node {
	if file == nil {
		return defaults
	}
	if defaults == nil || defaults.Kind != yaml.MappingNode || file.Kind != yaml.MappingNode || namesKind(defaults, file) {
		return file
	}
	for i := 0; i+1 < len(file.Content); i += 2 {
		key, val := file.Content[i], file.Content[i+1]
		if j := mappingIndex(defaults, key.Value); j >= 0 {
			defaults.Content[j+1] = mergeOver(defaults.Content[j+1], val)
			continue
		}
		defaults.Content = append(defaults.Content, key, val)
	}
	return defaults
}

// namesKind reports a file mapping that sets the `type` or `driver` its
// default has.
func namesKind(defaults, file *yaml.Node) bool {
	for _, k := range []string{"type", "driver"} {
		if mappingIndex(file, k) >= 0 && mappingIndex(defaults, k) >= 0 {
			return true
		}
	}
	return false
}

// mappingIndex returns the index of key's key node in mapping n, or -1.
func mappingIndex(n *yaml.Node, key string) int {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return i
		}
	}
	return -1
}

// sectionKeys returns the keys of the mapping under key in root (the
// brokers a file names, say).
func sectionKeys(root *yaml.Node, key string) map[string]bool {
	keys := map[string]bool{}
	if root == nil {
		return keys
	}
	j := mappingIndex(root, key)
	if j < 0 || root.Content[j+1].Kind != yaml.MappingNode {
		return keys
	}
	sec := root.Content[j+1]
	for i := 0; i+1 < len(sec.Content); i += 2 {
		keys[sec.Content[i].Value] = true
	}
	return keys
}

// projectsOnly reports a file that declares projections and no lanes: a
// process that projects, beside relays configured elsewhere. It gets no
// default lane: one would relay the store's herald_outbox to the embedded
// NATS server, taking events from the service's own relays to a broker
// nobody reads.
func projectsOnly(file *yaml.Node) bool {
	return file != nil && mappingIndex(file, "projections") >= 0 && mappingIndex(file, "lanes") < 0
}

// brokersWithoutLanes refuses a file that defines brokers of its own, none
// of them the default one, and neither lanes nor projections: the embedded
// defaults' lane would relay herald_outbox to the embedded NATS server, not
// to the file's brokers, marking the events delivered to a server nobody
// reads.
func brokersWithoutLanes(file *yaml.Node, fromFile map[string]bool) error {
	if len(fromFile) == 0 || fromFile["default"] || mappingIndex(file, "lanes") >= 0 || mappingIndex(file, "projections") >= 0 {
		return nil
	}
	return fmt.Errorf("lanes: the file defines brokers of its own (%s) and no lanes: declare the lanes that publish to them "+
		"(without lanes, the embedded defaults' lane would relay herald_outbox to an embedded NATS server instead)",
		strings.Join(sortedKeys(fromFile), ", "))
}

// dropUnusedDefaultBrokers removes the brokers that only the defaults
// define and no lane or projection names, so that a file with brokers and
// lanes of its own, or with projections alone, starts no embedded NATS
// server it did not ask for (and a lane that names no broker picks the
// file's only one).
func (f *File) dropUnusedDefaultBrokers(fromFile map[string]bool) {
	if len(fromFile) == 0 && (len(f.Lanes) > 0 || len(f.Projections) == 0) {
		return
	}
	used := map[string]bool{}
	for _, l := range f.Lanes {
		used[l.Broker] = true
	}
	for _, p := range f.Projections {
		used[p.Source.Broker] = true
	}
	for name := range f.Brokers {
		if !fromFile[name] && !used[name] {
			delete(f.Brokers, name)
		}
	}
}

// hasKey reports whether the mapping under section in root sets key.
func hasKey(root *yaml.Node, section, key string) bool {
	if root == nil {
		return false
	}
	j := mappingIndex(root, section)
	return j >= 0 && root.Content[j+1].Kind == yaml.MappingNode && mappingIndex(root.Content[j+1], key) >= 0
}
