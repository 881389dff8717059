package config

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// DefaultStore is the name of the store the `store` section sets: the
// store of every lane and projection that names none.
const DefaultStore = "default"

// StoreNames returns the configured stores' names: the default store
// first (when there is one), then the `stores` entries by name.
func (f *File) StoreNames() []string {
	if f.scope != "" {
		return []string{f.scope}
	}
	var names []string
	if !f.noDefaultStore {
		names = append(names, DefaultStore)
	}
	return append(names, sortedKeys(f.Stores)...)
}

// StoreName is the name of the store f's Store section is: the store a
// ForStore copy was cut down to, else the default store.
func (f *File) StoreName() string {
	if f.scope != "" {
		return f.scope
	}
	return DefaultStore
}

// storeConfig returns the store named name, or nil.
func (f *File) storeConfig(name string) *Store {
	if name == f.StoreName() && !f.noDefaultStore {
		return &f.Store
	}
	if f.scope != "" {
		return nil
	}
	return f.Stores[name]
}

// ForStore returns f cut down to the store named name: a copy whose Store
// section is that store's, whose Lanes and Projections are those that use
// it, and whose Stores are none. Every command that works on one database
// (and each of `herald run`'s relays) runs on such a copy; an unknown name
// is ErrInvalid naming the configured ones.
func (f *File) ForStore(name string) (*File, error) {
	s := f.storeConfig(name)
	if s == nil {
		return nil, fmt.Errorf("%w: unknown store %q (configured: %s)", ErrInvalid, name, strings.Join(f.StoreNames(), ", "))
	}
	c := *f
	c.Store, c.Stores, c.noDefaultStore, c.scope = *s, nil, false, name
	c.Lanes, c.Projections = nil, nil
	for _, l := range f.Lanes {
		if l.Store == name {
			c.Lanes = append(c.Lanes, l)
		}
	}
	c.projectionAt = nil
	for i, p := range f.Projections {
		if p.Store == name {
			c.Projections = append(c.Projections, p)
			c.projectionAt = append(c.projectionAt, f.projectionIndex(i))
		}
	}
	return &c, nil
}

// ProjectionPath is the key path in the whole file of f.Projections[i]
// ("projections[2]"), for errors about it: a ForStore copy's own index
// may differ.
func (f *File) ProjectionPath(i int) string {
	return fmt.Sprintf("projections[%d]", f.projectionIndex(i))
}

// projectionIndex is the index in the whole file of f.Projections[i].
func (f *File) projectionIndex(i int) int {
	if f.projectionAt != nil {
		return f.projectionAt[i]
	}
	return i
}

// LaneStore returns the name of the store of the lane named lane, or of
// the first lane when lane is empty.
func (f *File) LaneStore(lane string) (string, error) {
	l, err := f.Lane(lane)
	if err != nil {
		return "", err
	}
	return l.Store, nil
}

// defaultStoreName returns the name a lane's or projection's `store` key defaults
// to: the default store, else the only entry of `stores`.
func (f *File) defaultStoreName() string {
	if !f.noDefaultStore {
		return DefaultStore
	}
	if len(f.Stores) == 1 {
		for name := range f.Stores {
			return name
		}
	}
	return ""
}

// applyStoreDefaults gives every store its defaults and every lane and
// projection that names no store the default one.
func (f *File) applyStoreDefaults() {
	if !f.noDefaultStore {
		f.Store.applyDefaults()
	}
	for _, s := range f.Stores {
		if s != nil {
			s.applyDefaults()
		}
	}
	def := f.defaultStoreName()
	for i := range f.Lanes {
		if f.Lanes[i].Store == "" {
			f.Lanes[i].Store = def
		}
	}
	for i := range f.Projections {
		if f.Projections[i].Store == "" {
			f.Projections[i].Store = def
		}
	}
}

// validateStores checks every store section, and that no `stores` entry
// takes the default store's name.
func (f *File) validateStores(d Drivers) []error {
	var errs []error
	if !f.noDefaultStore {
		errs = append(errs, f.Store.validate(d, "store")...)
	}
	for _, name := range sortedKeys(f.Stores) {
		path := "stores." + name
		s := f.Stores[name]
		switch {
		case name == DefaultStore:
			errs = append(errs, fmt.Errorf("%s: the default store is the `store` section; name this store otherwise", path))
		case s == nil:
			errs = append(errs, fmt.Errorf("%s: is empty", path))
		default:
			errs = append(errs, s.validate(d, path)...)
		}
	}
	return errs
}

// checkStoreName checks a lane's or projection's `store` (key is its
// path): it must name a configured store.
func (f *File) checkStoreName(key, name string) error {
	if name == "" && len(f.StoreNames()) == 0 {
		return fmt.Errorf("%s: no store is configured (give `store` or `stores`)", key)
	}
	if name == "" {
		return fmt.Errorf("%s: is required: there is no default store (`store`) and several `stores` (%s)",
			key, strings.Join(f.StoreNames(), ", "))
	}
	if f.storeConfig(name) == nil {
		return fmt.Errorf("%s: unknown store %q (configured: %s)", key, name, strings.Join(f.StoreNames(), ", "))
	}
	return nil
}

// decodeStores decodes the driver part of every `stores` entry.
func (d Drivers) decodeStores(f *File, file *yaml.Node) []error {
	var errs []error
	for _, name := range sortedKeys(f.Stores) {
		if s := f.Stores[name]; s != nil {
			if err := s.decode(d, file); err != nil {
				errs = append(errs, fmt.Errorf("stores.%s: %w", name, err))
			}
		}
	}
	return errs
}
