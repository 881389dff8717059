package herald_test

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// module is this module's import path.
const module = "github.com/heraldhq/herald"

// importRules are the directions imports may not take (docs/architecture.md):
// each forbids packages matching from to import packages matching to.
var importRules = []struct {
	why      string
	from, to func(pkg string) bool
}{
	{"brokers do not import the storage seam (Receipt lives beside Event)",
		under("broker"), under("store")},
	{"stores and brokers do not import the CLI",
		anyOf(under("store"), under("broker")), under("internal/cli")},
	{"the relay, projector and admin know no database or broker adapter",
		anyOf(is("relay"), is("projector"), is("admin")), adapter},
	{"config is a generic loader: it imports no adapter (package drivers lists them)",
		is("config"), adapter},
	{"the CLI imports no example: cmd/herald adds `herald demo` (internal/demo)",
		under("internal/cli"), under("examples")},
	{"the lane and projection declarations are leaves (config reads files with them): the root and the seams only",
		anyOf(is("lane"), is("projection")), func(p string) bool { return !anyOf(is(""), is("broker"), is("store"), is("backoff"))(p) }},
	{"the example imports only public packages, so it can be copied out",
		under("examples"), under("internal")},
	{"the root package holds no database's SQL: each store package exports its Dialect",
		is(""), under("store")},
	{"nothing but the command imports the CLI",
		func(p string) bool { return !under("cmd")(p) && !under("internal/cli")(p) }, under("internal/cli")},
}

// TestImportRules checks every package's direct imports against
// importRules. Tests may import more (the relay's tests run real stores).
func TestImportRules(t *testing.T) {
	out, err := exec.Command("go", "list", "-f",
		`{{.ImportPath}} {{join .Imports " "}}`, module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	checked := 0
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		pkg := rel(fields[0])
		for _, imp := range fields[1:] {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			for _, r := range importRules {
				if r.from(pkg) && r.to(rel(imp)) && rel(imp) != pkg {
					t.Errorf("%s imports %s: %s", pkg, rel(imp), r.why)
				}
			}
		}
		checked++
	}
	if checked < 20 {
		t.Fatalf("go list named only %d packages", checked)
	}
}

// depRules are what a package may not depend on, directly or not: each
// forbids bad in `go list -deps` of pkg (tests' imports aside).
var depRules = []struct {
	pkg, why string
	bad      func(pkg string) bool
}{
	{"config", "config is data and validation: it links no adapter (package drivers lists them), nor the relay, the projector or what runs them (package daemon)",
		anyOf(adapter, is("relay"), under("projector"), is("daemon"), is("admin"))},
	{"internal/cli", "the CLI links no example (cmd/herald adds `herald demo`) and no adapter list (cmd/herald passes package drivers to cli.Main)",
		anyOf(under("examples"), is("drivers"))},
}

// TestDependencies checks every depRules package's whole dependency
// graph, not only its direct imports: a program that only reads config
// files links no adapter (nor the SDKs they pull in), and a binary built
// with cli.Main and fewer drivers links only those.
func TestDependencies(t *testing.T) {
	for _, r := range depRules {
		out, err := exec.Command("go", "list", "-deps", module+"/"+r.pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", r.pkg, err)
		}
		deps := strings.Fields(string(out))
		for _, dep := range deps {
			if strings.HasPrefix(dep, module) && r.bad(rel(dep)) {
				t.Errorf("%s depends on %s: %s", r.pkg, rel(dep), r.why)
			}
		}
		if len(deps) < 10 {
			t.Fatalf("go list -deps %s named only %d packages", r.pkg, len(deps))
		}
	}
}

// rel is a package path relative to the module ("" for the root).
func rel(pkg string) string {
	return strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
}

func under(dir string) func(string) bool {
	return func(p string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }
}

func is(pkg string) func(string) bool { return func(p string) bool { return p == pkg } }

func anyOf(fs ...func(string) bool) func(string) bool {
	return func(p string) bool {
		for _, f := range fs {
			if f(p) {
				return true
			}
		}
		return false
	}
}

// adapter matches a database or broker adapter package (not the seams,
// their conformance suites, or the in-memory broker used in tests).
func adapter(p string) bool {
	for _, seam := range []string{"store", "broker", "store/storetest", "broker/brokertest", "broker/memory"} {
		if p == seam {
			return false
		}
	}
	return under("store")(p) || under("broker")(p)
}
