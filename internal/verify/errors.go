package verify

import (
	"fmt"

	"github.com/heraldhq/herald/config"
)

// invalid is bad input or a lane verify cannot check: the CLI exits 2 on
// it (it is config.ErrInvalid), and its message is the reason alone.
type invalid struct{ msg string }

func (e invalid) Error() string        { return e.msg }
func (e invalid) Is(target error) bool { return target == config.ErrInvalid }

func invalidf(format string, args ...any) error { return invalid{fmt.Sprintf(format, args...)} }
