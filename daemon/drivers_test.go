package daemon

import (
	"github.com/heraldhq/herald/config"
	"github.com/heraldhq/herald/drivers"
)

// testDrivers are the herald binary's drivers, which the tests read files
// with.
var testDrivers = config.Drivers{Brokers: drivers.Brokers(), Stores: drivers.Stores()}

// parse is config.Parse with testDrivers.
func parse(data []byte, source string) (*config.File, error) {
	return config.Parse(data, source, testDrivers)
}
