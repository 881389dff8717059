package cli

import (
	"fmt"

	"github.com/heraldhq/herald/config"
)

// storeFile returns f cut down to the store a command that works on one
// database uses (config.File.ForStore): --store when given, else the store
// of lane when one is named, else the default store (or, with no default
// store, the first lane's). A lane named with a --store it is not in is a
// usage error.
func (a *app) storeFile(f *config.File, lane string) (*config.File, error) {
	name := a.storeName
	if lane != "" {
		in, err := f.LaneStore(lane)
		if err != nil {
			return nil, err
		}
		if name != "" && name != in {
			return nil, usagef("--store %s: lane %s is in store %s", name, lane, in)
		}
		name = in
	}
	if name == "" {
		name = config.DefaultStore
		if names := f.StoreNames(); len(names) == 0 || names[0] != config.DefaultStore {
			first, err := f.LaneStore("")
			if err != nil {
				return nil, err
			}
			name = first
		}
	}
	sf, err := f.ForStore(name)
	if err != nil && a.storeName != "" {
		return nil, fmt.Errorf("--store: %w", err)
	}
	return sf, err
}

// storeFiles returns f cut down to each store a command that works on
// every store uses (run, status, migrate): the one --store names, else
// every configured store.
func (a *app) storeFiles(f *config.File) ([]*config.File, error) {
	names := f.StoreNames()
	if a.storeName != "" {
		names = []string{a.storeName}
	}
	out := make([]*config.File, 0, len(names))
	for _, name := range names {
		sf, err := f.ForStore(name)
		if err != nil {
			return nil, fmt.Errorf("--store: %w", err)
		}
		out = append(out, sf)
	}
	return out, nil
}
