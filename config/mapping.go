package config

import "fmt"

// validateMappings refuses lanes that read one table (in one store)
// through different mappings, or one through a mapping and another as
// Herald's own: a store reads a table one way.
func (f *File) validateMappings() []error {
	var errs []error
	first := map[string]int{}
	for i, l := range f.Lanes {
		table := l.WithDefaults().Table // an unset table is the default one
		where := l.Store + "\x00" + table
		j, ok := first[where]
		if !ok {
			first[where] = i
			continue
		}
		if fmt.Sprint(l.Mapping()) != fmt.Sprint(f.Lanes[j].Mapping()) {
			errs = append(errs, fmt.Errorf("lanes[%d] (%s).columns: lane %s reads table %s through another mapping (columns, "+
				"statuses, time_unit, body must be the same on every lane of a table)", i, l.Name, f.Lanes[j].Name, table))
		}
	}
	return errs
}
