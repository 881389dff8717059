package config

import (
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/heraldhq/herald/store"
)

// Store is the `store` section: the keys every database has, and the rest
// read by the store.Driver that `driver` names.
type Store struct {
	// Driver is sqlite, mysql or postgres (the names of the drivers passed
	// to Parse).
	Driver string `yaml:"driver"`
	// DSN is the connection string (a file name for sqlite).
	DSN string `yaml:"dsn"`
	// Migrate runs migrations when `herald run` starts. Defaults to true.
	Migrate *bool `yaml:"migrate"`
	// Config is the driver's part of the section (sqlite.Config, …); set
	// by Parse, nil when the driver is unknown.
	Config store.DriverConfig `yaml:"-"`
	node   *yaml.Node
	// driverFromEnv: Driver is HERALD_STORE_DRIVER's, which errors name.
	driverFromEnv bool
}

// storeKeys are the keys of Store itself, for decoding without recursion.
type storeKeys struct {
	Driver  string `yaml:"driver"`
	DSN     string `yaml:"dsn"`
	Migrate *bool  `yaml:"migrate"`
}

// UnmarshalYAML reads the common keys and keeps the section for its
// driver, which is known only once the environment is applied.
func (s *Store) UnmarshalYAML(n *yaml.Node) error {
	var k storeKeys
	if err := n.Decode(&k); err != nil {
		return err
	}
	*s = Store{Driver: k.Driver, DSN: k.DSN, Migrate: k.Migrate, node: n}
	return nil
}

// decode decodes the section's driver part (the first of d.Stores when
// none is named); an unknown driver is left to validate, which names the
// known ones.
func (s *Store) decode(d Drivers, file *yaml.Node) error {
	if s.Driver == "" && len(d.Stores) > 0 {
		s.Driver = d.Stores[0].Name()
	}
	drv := d.store(s.Driver)
	if drv == nil {
		return nil
	}
	s.Config = drv.NewConfig()
	if s.node != nil {
		if err := s.node.Decode(s.Config); err != nil {
			return decodeError(err, file)
		}
	}
	return nil
}

// MarshalYAML writes the common keys followed by the driver's.
func (s Store) MarshalYAML() (any, error) {
	n, err := withKind("driver", s.Driver, s.Config)
	if err != nil {
		return nil, err
	}
	var common yaml.Node
	if err := common.Encode(storeKeys{DSN: s.DSN, Migrate: s.Migrate}); err != nil {
		return nil, err
	}
	n.Content = append(n.Content[:2], append(common.Content[2:], n.Content[2:]...)...)
	return n, nil
}

func (s *Store) applyDefaults() {
	if dd, ok := s.Config.(store.DefaultDSNer); ok && s.DSN == "" {
		s.DSN = dd.DefaultDSN()
	}
	if s.Migrate == nil {
		yes := true
		s.Migrate = &yes
	}
}

// validate returns the section's errors, each naming its key under path
// (store, stores.NAME).
func (s *Store) validate(d Drivers, path string) []error {
	var errs []error
	switch {
	case s.Config == nil:
		errs = append(errs, fmt.Errorf("%s.driver: %w%s", path, d.unknownStore(s.Driver), s.driverSource()))
		if s.DSN == "" {
			errs = append(errs, s.dsnRequired(path))
		}
	case s.DSN == "":
		errs = append(errs, s.dsnRequired(path))
	default:
		if err := s.Config.Validate(s.DSN); err != nil {
			errs = append(errs, fmt.Errorf("%s.%w%s", path, err, s.driverSource()))
		}
	}
	return errs
}

// dsnRequired is the error of a store without a DSN, naming the variable
// to set when the environment chose the driver.
func (s *Store) dsnRequired(path string) error {
	if s.driverFromEnv {
		return fmt.Errorf("%s.dsn: is required: HERALD_STORE_DRIVER=%s is set, so set HERALD_STORE_DSN too (or %s.dsn in the config file)",
			path, s.Driver, path)
	}
	return fmt.Errorf("%s.dsn: is required", path)
}

// driverSource says where the driver comes from when the environment set
// it, so that an error about the DSN is not blamed on the file alone.
func (s *Store) driverSource() string {
	if s.driverFromEnv {
		return fmt.Sprintf(" (the driver %s is HERALD_STORE_DRIVER's)", s.Driver)
	}
	return ""
}
