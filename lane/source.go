package lane

import "fmt"

// Source is where a lane finds its events.
type Source string

// The lane sources.
const (
	// SourcePoll claims rows from the outbox table (the default).
	SourcePoll Source = "poll"
	// SourceLog reads committed events from the database's log (a store
	// that is a store.LogReader; docs/loglanes.md).
	SourceLog Source = "log"
)

// Validate returns an error unless s is a known source (or empty: poll).
func (s Source) Validate() error {
	if s != "" && s != SourcePoll && s != SourceLog {
		return fmt.Errorf("%q is not poll or log", string(s))
	}
	return nil
}
