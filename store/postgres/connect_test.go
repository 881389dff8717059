package postgres_test

import (
	"context"
	"errors"
	"net/url"
	"testing"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/postgres"
)

// Rule: Open tells a database that does not exist from a server that is
// not there: the first is store.ErrMisconfigured, which waiting does not
// fix, and never herald.Unavailable. (The test server trusts every
// password, so a wrong one cannot be shown here; SQLSTATE 28P01 takes the
// same path.)
func TestOpenUnknownDatabaseIsMisconfigured(t *testing.T) {
	openStore(t) // skips (fails under CI) when the server is not there
	u, err := url.Parse(testenv.PostgresDSN())
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + testenv.Name("herald_nodb")
	s, err := postgres.Open(context.Background(), u.String(), postgres.Options{})
	if err == nil {
		s.Close()
		t.Fatal("opened")
	}
	if !errors.Is(err, store.ErrMisconfigured) || herald.IsUnavailable(err) {
		t.Errorf("want store.ErrMisconfigured, got %v", err)
	}
}
