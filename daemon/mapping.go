package daemon

import (
	"errors"
	"fmt"

	"github.com/heraldhq/herald/config"
	"github.com/heraldhq/herald/store"
)

// mapTables tells s which of the lanes' tables are mapped (a lane's
// columns, statuses and time_unit), before anything reads them: a
// migration then leaves those tables as they are and checks them against
// their mapping.
func mapTables(s store.Store, lanes []config.Lane) error {
	for _, l := range lanes {
		if err := store.MapTable(s, l.Table, l.Mapping()); err != nil {
			return fmt.Errorf("%w: lane %s: %v", config.ErrInvalid, l.Name, err)
		}
	}
	return nil
}

// mappingLane names, in err, the lane of a mapped table that does not
// match its mapping (store.MappingError), so that the message says which
// lane's columns to fix; other errors are returned as they are.
func mappingLane(lanes []config.Lane, table string, err error) error {
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
