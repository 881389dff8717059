package lane

import (
	"errors"
	"fmt"

	"github.com/heraldhq/herald/store"
)

// validateMappedLog checks the settings of a log lane on a mapped table
// (docs/adopt.md, "Log lanes on a mapped table"), and refuses
// on_delivered: leave anywhere else.
func (l Lane) validateMappedLog(m store.Mapping) []error {
	var errs []error
	refuse := func(key, why string) { errs = append(errs, fmt.Errorf("%s: %s", key, why)) }
	if l.Source != SourceLog {
		if l.OnDelivered == OnDeliveredLeave {
			refuse("on_delivered", "leave needs source: log")
		}
		return errs
	}
	if l.OnDelivered == OnDeliveredDelete {
		refuse("on_delivered", "delete is not supported on a mapped table: use mark, or leave for the table's own cleanup")
	}
	// The reader hands failed events to the lane's polling workers by
	// moving them to the retry status; those workers claim only that
	// status, never the fresh rows the reader publishes.
	if s := m.Statuses; len(s.Pending) > 0 && s.Retry == s.Pending[0] {
		refuse("statuses.retry", fmt.Sprintf("a log lane needs a retry status other than the first pending value %q "+
			"(e.g. pending: [pending, retryable]): failed events are handed to the polling workers in it", s.Pending[0]))
	}
	return errs
}

// errLeaveUnmapped is the refusal of on_delivered: leave on Herald's own
// table, whose rows retention deletes only once marked.
var errLeaveUnmapped = errors.New("leave needs a mapped table (columns); Herald's own tables are marked or deleted")
