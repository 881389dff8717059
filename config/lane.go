package config

import (
	"fmt"
	"strings"
)

// Lane returns the configured lane named name, or the first lane when name
// is empty. A name no lane has is an *UnknownLaneError.
func (f *File) Lane(name string) (*Lane, error) {
	if name == "" {
		if len(f.Lanes) == 0 {
			return nil, fmt.Errorf("%w: no lane uses store %s", ErrInvalid, f.StoreName())
		}
		return &f.Lanes[0], nil
	}
	for i := range f.Lanes {
		if f.Lanes[i].Name == name {
			return &f.Lanes[i], nil
		}
	}
	names := make([]string, 0, len(f.Lanes))
	for _, l := range f.Lanes {
		names = append(names, l.Name)
	}
	return nil, &UnknownLaneError{Name: name, Configured: names}
}

// UnknownLaneError is a lane name that no configured lane has, asked for
// by a caller (a command's argument or --lane): the caller's mistake, not
// the config's, so it does not wrap ErrInvalid.
type UnknownLaneError struct {
	// Name is the name asked for.
	Name string
	// Configured are the names of the lanes there are, in config order.
	Configured []string
}

func (e *UnknownLaneError) Error() string {
	return fmt.Sprintf("no lane %q (configured: %s)", e.Name, strings.Join(e.Configured, ", "))
}
