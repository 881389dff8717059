package testenv

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// KinesaliteDir is where .ci/run installs kinesalite (the npm package, an
// in-memory Kinesis emulator), under the module's root: npm install
// --prefix .tools/kinesalite kinesalite.
const KinesaliteDir = ".tools/kinesalite/node_modules/kinesalite"

// kinesaliteLauncher starts kinesalite on loopback (its command line
// listens on every interface) with streams ready at once.
const kinesaliteLauncher = `
const kinesalite = require(process.env.KINESALITE);
const server = kinesalite({createStreamMs: 0, deleteStreamMs: 0, updateStreamMs: 0, shardLimit: 200});
server.listen(Number(process.env.PORT), '127.0.0.1', (err) => {
  if (err) { console.error(err); process.exit(1); }
  console.log('listening');
});
`

// Kinesalite is a kinesalite server of the test's own on a free loopback
// port, in memory, stopped when the test ends.
type Kinesalite struct {
	// URL is the endpoint: http://127.0.0.1:port.
	URL    string
	cmd    *exec.Cmd
	exited chan struct{}
}

// StartKinesalite starts kinesalite with node, or skips the test (fails
// it under CI=true) when node or the package is missing
// (HERALD_TEST_KINESALITE names the package's directory, else
// KinesaliteDir under the module's root).
func StartKinesalite(t testing.TB) *Kinesalite {
	t.Helper()
	NoAWSMetadata()
	node, err := exec.LookPath("node")
	if err != nil {
		Unavailable(t, "node is not installed (kinesalite runs on it)", err)
	}
	dir, err := kinesaliteDir()
	if err != nil {
		Unavailable(t, "kinesalite is not installed (.ci/run installs it with npm into "+KinesaliteDir+")", err)
	}
	port := FreePort(t)
	k := &Kinesalite{URL: fmt.Sprintf("http://127.0.0.1:%d", port), exited: make(chan struct{})}
	k.cmd = exec.Command(node, "-e", kinesaliteLauncher)
	k.cmd.Env = append(os.Environ(), "KINESALITE="+dir, "PORT="+strconv.Itoa(port))
	out, err := k.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	k.cmd.Stderr = &stderr
	orphanGuard(k.cmd)
	if err := k.cmd.Start(); err != nil {
		t.Fatalf("start kinesalite: %v", err)
	}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		ok := sc.Scan() && sc.Text() == "listening"
		ready <- ok
		for sc.Scan() {
		}
		_ = k.cmd.Wait()
		close(k.exited)
	}()
	t.Cleanup(k.stop)
	select {
	case ok := <-ready:
		if !ok {
			<-k.exited
			t.Fatalf("kinesalite did not start: %s", stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("kinesalite on %s not listening after 30s", k.URL)
	}
	return k
}

// kinesaliteDir finds the kinesalite package.
func kinesaliteDir() (string, error) {
	if dir := os.Getenv("HERALD_TEST_KINESALITE"); dir != "" {
		return dir, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if fileExists(filepath.Join(dir, "go.mod")) {
			pkg := filepath.Join(dir, KinesaliteDir)
			if !fileExists(filepath.Join(pkg, "package.json")) {
				return "", fmt.Errorf("no %s", pkg)
			}
			return pkg, nil
		}
		if filepath.Dir(dir) == dir {
			return "", errors.New("no go.mod above the working directory")
		}
	}
}

func (k *Kinesalite) stop() {
	_ = k.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-k.exited:
	case <-time.After(10 * time.Second):
		_ = k.cmd.Process.Kill()
		<-k.exited
	}
}
