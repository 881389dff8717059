package sqlscan

import (
	"encoding/json"
	"time"

	"github.com/heraldhq/herald/store"
)

// The attempt_errors column holds a JSON array of the row's last failed
// attempts, oldest first, each {"n": attempt, "at": Unix ms on the database
// clock, "e": error text}: short names, since a row keeps up to
// store.MaxAttemptErrors of them. The failure marks of each store append
// to it in SQL (no read before the write); this decodes it for Get.

// storedAttempt is one element of attempt_errors.
type storedAttempt struct {
	N  int    `json:"n"`
	At int64  `json:"at"`
	E  string `json:"e"`
}

// DecodeAttemptErrors reads an attempt_errors value; NULL (a row that
// never failed, or failed before the column existed) and text that is not
// such an array (written by hand) read as no history: it is informational,
// and must not make the event unreadable.
func DecodeAttemptErrors(s string) []store.AttemptError {
	if s == "" {
		return nil
	}
	var stored []storedAttempt
	if json.Unmarshal([]byte(s), &stored) != nil {
		return nil
	}
	out := make([]store.AttemptError, 0, len(stored))
	for _, a := range stored {
		out = append(out, store.AttemptError{Attempt: a.N, At: time.UnixMilli(a.At).UTC(), Error: a.E})
	}
	return out
}
