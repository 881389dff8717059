package config

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/heraldhq/herald/broker"
	"github.com/heraldhq/herald/store"
)

// Drivers are the broker types and databases a program ships, which Parse
// reads config files with. Package config imports no broker or store
// adapter: the program lists them (the herald binary's list is package
// drivers) and passes them here.
type Drivers struct {
	Brokers []broker.Driver
	Stores  []store.Driver
}

func (d Drivers) broker(typ string) broker.Driver {
	for _, b := range d.Brokers {
		if b.Type() == typ {
			return b
		}
	}
	return nil
}

func (d Drivers) brokerTypes() []string {
	names := make([]string, 0, len(d.Brokers))
	for _, b := range d.Brokers {
		names = append(names, b.Type())
	}
	sort.Strings(names)
	return names
}

func (d Drivers) store(name string) store.Driver {
	for _, s := range d.Stores {
		if s.Name() == name {
			return s
		}
	}
	return nil
}

// unknownStore names the drivers there are: "want sqlite, mysql or postgres".
func (d Drivers) unknownStore(name string) error {
	names := make([]string, 0, len(d.Stores))
	for _, s := range d.Stores {
		names = append(names, s.Name())
	}
	want := strings.Join(names, ", ")
	if i := strings.LastIndex(want, ", "); i >= 0 {
		want = want[:i] + " or " + want[i+2:]
	}
	return fmt.Errorf("unknown database driver %q (want %s)", name, want)
}

// decode decodes the store section's and every broker's driver part;
// file is the file's own document, for naming keys in type errors.
func (d Drivers) decode(f *File, file *yaml.Node) error {
	var errs []error
	for _, name := range sortedKeys(f.Brokers) {
		if b := f.Brokers[name]; b != nil {
			if err := b.decode(d, file); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if !f.noDefaultStore {
		if err := f.Store.decode(d, file); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, d.decodeStores(f, file)...)
	return errors.Join(errs...)
}
