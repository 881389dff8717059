package sqlite_test

import (
	"testing"

	"github.com/heraldhq/herald/store/sqlite"
	"github.com/heraldhq/herald/store/storetest"
)

func TestProjections(t *testing.T) {
	storetest.RunProjections(t, opener(t, sqlite.Options{}))
}
