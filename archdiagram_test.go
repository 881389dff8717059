package herald_test

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// diagramBoxes maps the boxes of docs/architecture.md's package diagram to
// the packages each stands for. Packages in no box (the test kits, the
// scripts) are not drawn.
var diagramBoxes = []struct {
	id string
	in func(pkg string) bool
}{
	{"cmd", under("cmd/herald")},
	{"cli", under("internal/cli")},
	{"demo", under("internal/demo")},
	{"verify", under("internal/verify")},
	{"faultproxy", under("internal/faultproxy")},
	{"bench", under("internal/bench")},
	{"drivers", is("drivers")},
	{"giftwall", under("examples/giftwall")},
	{"daemon", is("daemon")},
	{"config", is("config")},
	{"admin", is("admin")},
	{"relay", is("relay")},
	{"sqlproj", is("projector/sqlproj")},
	{"projector", is("projector")},
	{"lane", is("lane")},
	{"projection", is("projection")},
	{"seams", anyOf(is("store"), is("broker"))},
	{"root", is("")},
	{"legacy", is("internal/legacyenqueue")},
	{"helpers", anyOf(is("backoff"), is("redact"), is("internal/sleep"))},
	{"adapters", func(p string) bool {
		return adapter(p) && !anyOf(under("store/storetest"), under("broker/brokertest"), under("store/internal/dbtest"))(p)
	}},
}

// box is the diagram box of pkg, "" when it is not drawn.
func box(pkg string) string {
	for _, b := range diagramBoxes {
		if b.in(pkg) {
			return b.id
		}
	}
	return ""
}

// arrow matches `a["label"] --> b` in the mermaid source.
var arrow = regexp.MustCompile(`^\s*(\w+)(?:\["[^"]*"\])?\s*-->\s*(\w+)`)

// TestArchitectureDiagram holds docs/architecture.md's package diagram
// to the imports: every arrow drawn is an import between the boxes' packages,
// and every such import is drawn, except those into the root package,
// which the text says nearly every package has (drawn from the seams only).
func TestArchitectureDiagram(t *testing.T) {
	doc, err := os.ReadFile("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	drawn := map[string]bool{}
	for _, line := range strings.Split(string(doc), "\n") {
		if m := arrow.FindStringSubmatch(line); m != nil {
			drawn[m[1]+" --> "+m[2]] = true
		}
	}
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	actual := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		from := box(rel(fields[0]))
		for _, imp := range fields[1:] {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			to := box(rel(imp))
			if from == "" || to == "" || from == to || (to == "root" && from != "seams") {
				continue
			}
			actual[from+" --> "+to] = true
		}
	}
	for _, a := range sortedKeys(actual) {
		if !drawn[a] {
			t.Errorf("docs/architecture.md does not draw %s, an import that exists", a)
		}
	}
	for _, a := range sortedKeys(drawn) {
		if !actual[a] {
			t.Errorf("docs/architecture.md draws %s, but no such import exists", a)
		}
	}
	if len(drawn) < 20 {
		t.Fatalf("found only %d arrows in the diagram", len(drawn))
	}
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
