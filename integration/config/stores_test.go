package config

import (
	"errors"
	. "github.com/heraldhq/herald/config"
	"strings"
	"testing"
)

const storesYAML = `
store: {driver: sqlite, dsn: main.db}
stores:
  a: {driver: mysql, dsn: "root@tcp(127.0.0.1:3306)/a"}
  pg: {driver: postgres, dsn: "postgres://postgres@127.0.0.1:5432/pg"}
brokers:
  b: {type: stdout}
lanes:
  - {name: main, destination: x}
  - {name: la, store: a, destination: x}
  - {name: lpg, store: pg, destination: x}
`

// Rule: `stores` names databases next to `store` (the default one); a lane
// names its store, one that names none is the default store's; ForStore
// cuts the file down to one store's lanes.
func TestStoresNamedNextToTheDefault(t *testing.T) {
	f, err := parse([]byte(storesYAML), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.StoreNames(), ","); got != "default,a,pg" {
		t.Fatalf("StoreNames = %s, want default,a,pg", got)
	}
	for lane, want := range map[string]string{"main": DefaultStore, "la": "a", "lpg": "pg"} {
		if got, err := f.LaneStore(lane); err != nil || got != want {
			t.Errorf("LaneStore(%s) = %q, %v; want %q", lane, got, err, want)
		}
	}
	a, err := f.ForStore("a")
	if err != nil {
		t.Fatal(err)
	}
	if a.Store.Driver != "mysql" || a.StoreName() != "a" || len(a.Lanes) != 1 || a.Lanes[0].Name != "la" || len(a.Stores) != 0 {
		t.Fatalf("ForStore(a) = store %+v named %s, lanes %+v", a.Store, a.StoreName(), a.Lanes)
	}
	if *a.Store.Migrate != true {
		t.Fatalf("stores.a.migrate defaults to %v, want true", *a.Store.Migrate)
	}
	if _, err := f.ForStore("nope"); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `unknown store "nope" (configured: default, a, pg)`) {
		t.Fatalf("ForStore(nope) = %v", err)
	}
	out, err := f.Print()
	if err != nil || !strings.Contains(string(out), "stores:") || !strings.Contains(string(out), "store: a") {
		t.Fatalf("Print = %s, %v; want the stores and each lane's store", out, err)
	}
}

// Rule: a file with `stores` and no `store` has no default store: the
// embedded SQLite default is not used; a lane then names its store, unless
// there is only one.
func TestStoresWithoutADefault(t *testing.T) {
	one := "stores:\n  a: {driver: mysql, dsn: \"root@tcp(127.0.0.1:3306)/a\"}\nbrokers:\n  b: {type: stdout}\nlanes: [{name: l, destination: x}]\n"
	f, err := parse([]byte(one), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.StoreNames(), ","); got != "a" || f.Lanes[0].Store != "a" {
		t.Fatalf("StoreNames = %s, lane store %q; want a only", got, f.Lanes[0].Store)
	}
	if out, err := f.Print(); err != nil || strings.Contains(string(out), "\nstore:") || !strings.Contains(string(out), "stores:") {
		t.Fatalf("Print = %s, %v; want stores and no store section", out, err)
	}
	two := strings.Replace(one, "brokers:", "  c: {driver: sqlite, dsn: c.db}\nbrokers:", 1)
	_, err = parse([]byte(two), "test.yaml")
	if err == nil || !strings.Contains(err.Error(), "lanes[0] (l).store: is required") {
		t.Fatalf("a lane without store among two stores and no default: %v", err)
	}
}

// Each bad stores input names its key path.
func TestBadStoresNameTheKey(t *testing.T) {
	cases := map[string]struct{ edit, want string }{
		"unknown store":       {"store: pg,", `lanes[2] (lpg).store: unknown store "nope" (configured: default, a, pg)`},
		"store named default": {"a: {driver", "stores.default: the default store is the `store` section"},
		"bad driver":          {"driver: mysql", "stores.a.driver: unknown database driver"},
		"unknown key":         {"dsn: \"root", "stores.a.colour: unknown key"},
		"missing dsn":         {"postgres, dsn: \"postgres://postgres@127.0.0.1:5432/pg\"", "stores.pg.dsn: is required"},
	}
	replace := map[string]string{
		"unknown store":       "store: nope,",
		"store named default": "default: {driver",
		"bad driver":          "driver: oracle",
		"unknown key":         "colour: red, dsn: \"root",
		"missing dsn":         "postgres",
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			yaml := strings.Replace(storesYAML, c.edit, replace[name], 1)
			_, err := parse([]byte(yaml), "test.yaml")
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v does not mention %q", err, c.want)
			}
		})
	}
}

// Rule: a projection names its store too.
func TestProjectionNamesItsStore(t *testing.T) {
	yaml := storesYAML + "projections:\n  - {name: p, store: pg, source: {outbox: herald_outbox}, statements: [\"SELECT 1\"]}\n" +
		"  - {name: q, store: zz, source: {outbox: herald_outbox}, statements: [\"SELECT 1\"]}\n"
	_, err := parse([]byte(yaml), "test.yaml")
	if err == nil || !strings.Contains(err.Error(), `projections[1].store: unknown store "zz"`) {
		t.Fatalf("projection with an unknown store: %v", err)
	}
	f, err := parse([]byte(strings.Replace(yaml, "store: zz", "store: a", 1)), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pg, _ := f.ForStore("pg")
	def, _ := f.ForStore(DefaultStore)
	if len(pg.Projections) != 1 || pg.Projections[0].Name != "p" || len(def.Projections) != 0 {
		t.Fatalf("ForStore projections: pg %+v, default %+v", pg.Projections, def.Projections)
	}
	a, _ := f.ForStore("a")
	if len(a.Projections) != 1 || a.ProjectionPath(0) != "projections[1]" {
		t.Fatalf("store a's projection q is %s of the file, want projections[1]", a.ProjectionPath(0))
	}
}
