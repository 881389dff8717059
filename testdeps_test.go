package herald_test

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// heavyTestModules may not be loaded by the tests of a library package:
// `go mod tidy` in a user's module loads the tests of every Herald package
// the user's program imports, and fetches what they import
// (docs/architecture.md, "What a program pays for what it does not use").
// Tests that need these live in the test-only module integration/.
var heavyTestModules = []string{
	"vitess.io/vitess",                   // the MariaDB binlog reader
	"github.com/nats-io/nats-server/v2",  // the embedded NATS server
	"github.com/twmb/franz-go/pkg/kfake", // the in-process Kafka
	"github.com/jackc/pglogrepl",         // PostgreSQL logical replication
	"google.golang.org/grpc",             // Google Pub/Sub and OTLP/gRPC
	"github.com/rabbitmq/amqp091-go",     // RabbitMQ (testenv's node is in rabbitenv)
}

// libraryRoots are the programs checked: one that relays from MariaDB to
// Kafka, and one that only loads the config. Every Herald package they
// import is checked with them.
var libraryRoots = []string{"relay", "store/mysql", "broker/kafka", "config"}

// TestLibraryTestsLoadNoHeavyModules: no test of a Herald package that
// libraryRoots import loads a package of heavyTestModules.
func TestLibraryTestsLoadNoHeavyModules(t *testing.T) {
	args := []string{"list", "-deps"}
	for _, r := range libraryRoots {
		args = append(args, module+"/"+r)
	}
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	var pkgs []string
	for _, p := range strings.Fields(string(out)) {
		if p == module || strings.HasPrefix(p, module+"/") {
			pkgs = append(pkgs, p)
		}
	}
	if len(pkgs) < len(libraryRoots) {
		t.Fatalf("go list -deps found %d Herald packages: %v", len(pkgs), pkgs)
	}
	for _, p := range pkgs {
		for _, heavy := range heavyModulesOfTests(t, p) {
			t.Errorf("the tests of %s load %s: move them to integration/ (a user's go mod tidy would fetch it)", rel(p), heavy)
		}
	}
}

// heavyModulesOfTests lists the heavyTestModules that pkg's tests load.
func heavyModulesOfTests(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-test", "-f",
		`{{with .Module}}{{.Path}}{{end}}`, pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps -test %s: %v", pkg, err)
	}
	seen := map[string]bool{}
	var found []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		m := sc.Text()
		for _, heavy := range heavyTestModules {
			if m == heavy && !seen[m] {
				seen[m] = true
				found = append(found, m)
			}
		}
	}
	return found
}
