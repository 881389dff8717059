package mysql_test

import (
	"context"
	"errors"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/internal/testenv"
	"github.com/heraldhq/herald/store"
	"github.com/heraldhq/herald/store/mysql"
)

// Rule: Open tells settings the server refuses (a wrong password, a
// database that does not exist) from a server that is not there: the
// first are store.ErrMisconfigured, which waiting does not fix, and never
// herald.Unavailable.
func TestOpenRefusedSettingsAreMisconfigured(t *testing.T) {
	openStore(t) // skips (fails under CI) when the server is not there
	for name, change := range map[string]func(c *gomysql.Config){
		"wrong password":   func(c *gomysql.Config) { c.Passwd = "not-the-password" },
		"unknown database": func(c *gomysql.Config) { c.DBName = testenv.Name("herald_nodb") },
	} {
		t.Run(name, func(t *testing.T) {
			cfg, err := gomysql.ParseDSN(testenv.MySQLDSN())
			if err != nil {
				t.Fatal(err)
			}
			change(cfg)
			s, err := mysql.Open(context.Background(), cfg.FormatDSN(), mysql.Options{})
			if err == nil {
				s.Close()
				t.Fatal("opened")
			}
			if !errors.Is(err, store.ErrMisconfigured) || herald.IsUnavailable(err) {
				t.Errorf("want store.ErrMisconfigured, got %v", err)
			}
		})
	}
}
