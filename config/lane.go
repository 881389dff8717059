package config

import "fmt"

// Lane returns the configured lane named name, or the first lane when name
// is empty.
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
	var names []string
	for _, l := range f.Lanes {
		names = append(names, l.Name)
	}
	return nil, fmt.Errorf("%w: no lane %q (configured: %v)", ErrInvalid, name, names)
}
