package main

import (
	"bufio"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// No container builder can fetch base images here, so the Dockerfile is
// checked in two ways: rules a linter would apply, and its build step run
// as a script on this machine, whose binary must be static and start.

// dockerfile is the Dockerfile's instructions, one per line, comments and
// blank lines dropped.
func dockerfile(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "deploy", "docker", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	return lines
}

// Rule: two stages, a pinned builder, a non-root user in the final stage,
// an exec-form entrypoint, and the binary copied from where it is built.
func TestDockerfileRules(t *testing.T) {
	lines := dockerfile(t)
	var froms, users []string
	var entry, build, copyBin string
	for _, l := range lines {
		switch word, rest, _ := strings.Cut(l, " "); word {
		case "FROM":
			froms = append(froms, rest)
		case "USER":
			users = append(users, rest)
		case "ENTRYPOINT":
			entry = rest
		case "RUN":
			if strings.Contains(rest, "go build") {
				build = rest
			}
		case "COPY":
			if strings.Contains(rest, "--from=build") && strings.Contains(rest, "/usr/local/bin/herald") {
				copyBin = rest
			}
		}
	}
	switch {
	case len(froms) != 2 || !strings.HasSuffix(froms[0], " AS build") || strings.Contains(froms[0], ":latest"):
		t.Errorf("want a pinned build stage and a final stage, got FROM %q", froms)
	case !allPinned(froms):
		t.Errorf("every FROM must pin its image by digest (IMAGE:TAG@sha256:...), got FROM %q", froms)
	case len(users) == 0 || strings.HasPrefix(users[len(users)-1], "0") || strings.HasPrefix(users[len(users)-1], "root"):
		t.Errorf("the final stage must run as a non-root user, got USER %q", users)
	case !strings.HasPrefix(entry, "[") || !strings.Contains(entry, "/usr/local/bin/herald"):
		t.Errorf("want an exec-form ENTRYPOINT of the binary, got %q", entry)
	case !strings.Contains(build, "CGO_ENABLED=0") || !strings.Contains(build, "-o /out/herald"):
		t.Errorf("want a static build to /out/herald, got RUN %q", build)
	case !strings.Contains(copyBin, "/out/herald"):
		t.Errorf("the final stage must copy /out/herald, got COPY %q", copyBin)
	}
}

// digestRef matches an image reference that names its tag and pins the
// content by a sha256 digest: IMAGE:TAG@sha256:<64 hex>.
var digestRef = regexp.MustCompile(`^[a-z0-9./_-]+:[A-Za-z0-9._-]+@sha256:[0-9a-f]{64}$`)

// allPinned reports whether every FROM (image, then AS name or flags)
// carries a tag and a digest: a tag alone moves under the build.
func allPinned(froms []string) bool {
	for _, from := range froms {
		image := ""
		for _, f := range strings.Fields(from) {
			if !strings.HasPrefix(f, "--") {
				image = f
				break
			}
		}
		if !digestRef.MatchString(image) {
			return false
		}
	}
	return len(froms) > 0
}

// Rule: the Dockerfile's build step, run as a script from the repository
// root, makes a static binary (no ELF interpreter) that starts.
func TestDockerfileBuildStep(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	var build string
	for _, l := range dockerfile(t) {
		if strings.HasPrefix(l, "RUN ") && strings.Contains(l, "go build") {
			build = strings.TrimPrefix(l, "RUN ")
		}
	}
	out := t.TempDir()
	cmd := exec.Command("sh", "-c", strings.ReplaceAll(build, "/out/", out+"/"))
	cmd.Dir = filepath.Join("..", "..")
	cmd.Env = append(os.Environ(), "VERSION=v0.0.0-docker-test") // the build's ARG VERSION
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", build, err, msg)
	}
	bin := filepath.Join(out, "herald")
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Fatalf("%s is dynamically linked (has an ELF interpreter)", bin)
		}
	}
	if msg, err := exec.Command(bin, "--version").CombinedOutput(); err != nil || !strings.HasPrefix(string(msg), "herald v0.0.0-docker-test ") {
		t.Fatalf("%s --version: %v %q, want the version passed as VERSION", bin, err, msg)
	}
}

// Rule: the build context leaves out the history and a checkout's local
// state (a SQLite file and embedded NATS data of `go run ./cmd/herald
// run`, tools, binaries).
func TestDockerignore(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, l := range strings.Split(string(data), "\n") {
		have[strings.TrimSpace(l)] = true
	}
	for _, want := range []string{".git", ".tools", "**/*.db", "**/herald-data", "/herald", "*.test"} {
		if !have[want] {
			t.Errorf(".dockerignore does not leave out %s", want)
		}
	}
}
