package config

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// yamlLine matches the "line N: " that yaml's errors start with.
var yamlLine = regexp.MustCompile(`line (\d+): `)

// syntaxError reports a YAML syntax error at the line where the file stops
// parsing. yaml's parser often names the line where the enclosing block
// began (line 1 for a bad indent on line 3); the shortest prefix of the file
// that fails with the same message ends at the faulty line. When no prefix
// fails the same way (an unclosed bracket, say) yaml's own line is kept.
func syntaxError(data []byte, err error) error {
	want := yamlLine.ReplaceAllString(err.Error(), "")
	lines := bytes.SplitAfter(data, []byte("\n"))
	var prefix []byte
	for i, l := range lines {
		prefix = append(prefix, l...)
		var doc yaml.Node
		perr := yaml.Unmarshal(prefix, &doc)
		if perr != nil && yamlLine.ReplaceAllString(perr.Error(), "") == want {
			return fmt.Errorf("line %d: %s", i+1, strings.TrimPrefix(want, "yaml: "))
		}
	}
	return err
}

// decodeError rewrites yaml's type errors ("line 7: cannot unmarshal !!str
// `many` into int") to name the key at that line too.
func decodeError(err error, file *yaml.Node) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		return err
	}
	paths := map[int]string{}
	indexLines(file, "", paths)
	msgs := make([]error, 0, len(te.Errors))
	for _, m := range te.Errors {
		if sub := yamlLine.FindStringSubmatch(m); sub != nil {
			if n, _ := strconv.Atoi(sub[1]); paths[n] != "" {
				m = strings.Replace(m, sub[0], sub[0]+paths[n]+": ", 1)
			}
		}
		msgs = append(msgs, errors.New(m))
	}
	return errors.Join(msgs...)
}

// indexLines records the key path of every value node by its line.
func indexLines(n *yaml.Node, path string, paths map[int]string) {
	if n == nil {
		return
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			p := join(path, n.Content[i].Value)
			paths[n.Content[i+1].Line] = p
			indexLines(n.Content[i+1], p, paths)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			if _, seen := paths[c.Line]; !seen {
				paths[c.Line] = p
			}
			indexLines(c, p, paths)
		}
	}
}
