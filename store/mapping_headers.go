package store

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/heraldhq/herald"
)

// validateHeaderColumns refuses header names that are empty, reserved
// (herald.ReservedHeader: Herald sets those from the event) or the same
// but for case (brokers such as RocketMQ and HTTP fold case), and a
// column carried under two names.
func validateHeaderColumns(hc map[string]string) []error {
	var errs []error
	names := map[string]string{}
	columns := map[string]string{}
	for _, name := range HeaderNames(hc) {
		col := hc[name]
		key := "header_columns." + name
		if name == "" {
			key = "header_columns"
		}
		add := func(err error) { errs = append(errs, fmt.Errorf("%s: %w", key, err)) }
		switch why := herald.ReservedHeader(name); {
		case name == "":
			add(errors.New("a header has an empty name"))
		case why != "":
			add(fmt.Errorf("header %q is reserved: %s", name, why))
		case names[strings.ToLower(name)] != "":
			add(fmt.Errorf("header %q is already header_columns.%s but for case", name, names[strings.ToLower(name)]))
		}
		names[strings.ToLower(name)] = name
		if err := herald.ValidateIdentifier(col); err != nil {
			add(err)
			continue
		}
		if first := columns[strings.ToLower(col)]; first != "" {
			add(fmt.Errorf("column %s is already header_columns.%s", col, first))
		}
		columns[strings.ToLower(col)] = name
	}
	return errs
}

// HeaderNames returns hc's header names in sorted order: the order in
// which a claim reads their columns, and errors name them.
func HeaderNames(hc map[string]string) []string {
	names := make([]string, 0, len(hc))
	for name := range hc {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// HeaderColumnNames returns the columns the header columns read, in the
// order of their headers' names.
func (m Mapping) HeaderColumnNames() []string {
	var out []string
	for _, name := range HeaderNames(m.HeaderColumns) {
		out = append(out, m.HeaderColumns[name])
	}
	return out
}
