package mysql_test

import (
	"testing"

	"github.com/heraldhq/herald/store/internal/dbtest"
)

// herald.Enqueue's dialect detection names this database, and its INSERT
// (internal/legacyenqueue) runs here.
func TestDetectAndEnqueue(t *testing.T) { dbtest.DetectAndEnqueue(t, openStore(t)) }
