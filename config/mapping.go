package config

import (
	"errors"
	"fmt"

	"github.com/heraldhq/herald/store"
)

// mapTables tells s which of the lanes' tables are mapped (a lane's
// columns, statuses and time_unit), before anything reads them: a
// migration then leaves those tables as they are and checks them against
// their mapping.
func mapTables(s store.Store, lanes []Lane) error {
	for _, l := range lanes {
		if err := store.MapTable(s, l.Table, l.Mapping()); err != nil {
			return fmt.Errorf("%w: lane %s: %v", ErrInvalid, l.Name, err)
		}
	}
	return nil
}

// mappingLane names, in err, the lane of a mapped table that does not
// match its mapping (store.MappingError), so that the message says which
// lane's columns to fix; other errors are returned as they are.
func mappingLane(lanes []Lane, table string, err error) error {
	var me *store.MappingError
	if !errors.As(err, &me) {
		return err
	}
	for _, l := range lanes {
		if l.Table == table && !l.Mapping().IsZero() {
			return &NotMigratedError{msg: fmt.Sprintf("lane %s: %v", l.Name, me)}
		}
	}
	return err
}

// validateMappings refuses lanes that read one table (in one store)
// through different mappings, or one through a mapping and another as
// Herald's own: a store reads a table one way.
func (f *File) validateMappings() []error {
	var errs []error
	first := map[string]int{}
	for i, l := range f.Lanes {
		where := l.Store + "\x00" + l.Table
		j, ok := first[where]
		if !ok {
			first[where] = i
			continue
		}
		if fmt.Sprint(l.Mapping()) != fmt.Sprint(f.Lanes[j].Mapping()) {
			errs = append(errs, fmt.Errorf("lanes[%d] (%s).columns: lane %s reads table %s through another mapping (columns, "+
				"statuses, time_unit, body must be the same on every lane of a table)", i, l.Name, f.Lanes[j].Name, l.Table))
		}
	}
	return errs
}
