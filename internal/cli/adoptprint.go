package cli

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/heraldhq/herald/store"
)

// mappingYAML is a mapping as a lane's keys give it.
type mappingYAML struct {
	Columns  store.Columns  `yaml:"columns"`
	Statuses store.Statuses `yaml:"statuses"`
	TimeUnit store.TimeUnit `yaml:"time_unit"`
}

// proposedLane is the lane herald adopt proposes, to paste under lanes:.
type proposedLane struct {
	Name        string `yaml:"name"`
	Table       string `yaml:"table"`
	mappingYAML `yaml:",inline"`
}

// writeText prints the report: what was found as comments, then the
// proposed lane (--table) or the problems (--lane), then the missing
// indexes; a proposal stays valid YAML to paste.
func (r *adoptReport) writeText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# herald adopt: table %s in store %s\n# columns: %s\n", r.Table, r.Store, r.columnList())
	if len(r.Statuses) > 0 {
		fmt.Fprintf(&b, "# %s values: %s\n", r.Mapping.Columns.Status, r.valueList())
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "# check %s\n", n)
	}
	if r.Lane == "" {
		for _, p := range r.Problems {
			fmt.Fprintf(&b, "# %s\n", p)
		}
		fmt.Fprintf(&b, "# a lane for it: add broker and destination (docs/adopt.md)\n")
		lane, err := r.laneYAML()
		if err != nil {
			return err
		}
		b.WriteString(lane)
	} else {
		for _, p := range r.Problems {
			fmt.Fprintf(&b, "%s\n", p)
		}
		if len(r.Problems) == 0 {
			fmt.Fprintf(&b, "lane %s: its mapping matches table %s\n", r.Lane, r.Table)
		}
	}
	if len(r.CreateIndexes) > 0 {
		fmt.Fprintf(&b, "# indexes its claims need that %s lacks (without them every claim scans the table):\n", r.Table)
		for _, c := range r.CreateIndexes {
			fmt.Fprintf(&b, "# %s;\n", c)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (r *adoptReport) columnList() string {
	parts := make([]string, len(r.Columns))
	for i, c := range r.Columns {
		parts[i] = c.Name + " " + c.Type
	}
	return strings.Join(parts, ", ")
}

func (r *adoptReport) valueList() string {
	parts := make([]string, len(r.Statuses))
	for i, v := range r.Statuses {
		parts[i] = fmt.Sprintf("%q %d rows", v.Value, v.Rows)
	}
	return strings.Join(parts, ", ")
}

// laneYAML is the proposed lane as a list of one, for under lanes:.
func (r *adoptReport) laneYAML() (string, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	lane := proposedLane{Name: r.Table, Table: r.Table, mappingYAML: mappingYAML{r.Mapping.Columns, r.Mapping.Statuses, r.Mapping.TimeUnit}}
	if err := enc.Encode([]proposedLane{lane}); err != nil {
		return "", err
	}
	return b.String(), enc.Close()
}

// mappingJSON is m as a lane's keys give it, for JSON.
func mappingJSON(m store.Mapping) any {
	out, err := yaml.Marshal(mappingYAML{m.Columns, m.Statuses, m.TimeUnit})
	var v map[string]any
	if err == nil {
		err = yaml.Unmarshal(out, &v)
	}
	if err != nil {
		return nil // yaml of plain strings does not fail
	}
	return v
}
