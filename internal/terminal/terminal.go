// Package terminal tells whether output goes to a terminal, where the
// CLI's live views redraw a line in place instead of printing a line per
// update.
package terminal

import (
	"io"
	"os"
)

// Is reports whether w is a character device (a terminal).
func Is(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
