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

// The AWS emulators the tests run, npm packages that .ci/run installs
// under the module's root (npm install --prefix .tools/NAME NAME@VERSION),
// each started with node on a free loopback port, in memory.
var (
	// Fauxqs emulates SQS (JSON protocol, FIFO queues with group locking
	// and deduplication, batch calls, size and character checks) and SNS
	// (topics, FIFO topics, fan-out to SQS with raw delivery).
	Fauxqs = Emulator{Name: "fauxqs", Version: "1.9.2", Env: "HERALD_TEST_FAUXQS", Launcher: fauxqsLauncher}
	// Kinesalite emulates Kinesis Data Streams (PutRecords, shards,
	// SplitShard and MergeShards, shard iterators).
	Kinesalite = Emulator{Name: "kinesalite", Version: "3.3.3", Env: "HERALD_TEST_KINESALITE", Launcher: kinesaliteLauncher}
)

// Their launchers listen on loopback only (their command lines listen on
// every interface) and print "listening" once they do.
const (
	fauxqsLauncher = `
const { pathToFileURL } = await import('node:url');
const { buildApp } = await import(pathToFileURL(process.env.PACKAGE + '/dist/app.js').href);
const app = buildApp({ logger: false });
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
console.log('listening');
`
	kinesaliteLauncher = `
const { createRequire } = await import('node:module');
const kinesalite = createRequire(process.env.PACKAGE + '/')(process.env.PACKAGE);
const server = kinesalite({createStreamMs: 0, deleteStreamMs: 0, updateStreamMs: 0, shardLimit: 200});
server.listen(Number(process.env.PORT), '127.0.0.1', (err) => {
  if (err) { console.error(err); process.exit(1); }
  console.log('listening');
});
`
)

// Emulator is an npm package that serves an AWS API.
type Emulator struct {
	Name, Version string
	// Env names the variable that may give the package's directory.
	Env      string
	Launcher string
}

// Dir is where .ci/run installs the package, under the module's root.
func (e Emulator) Dir() string { return filepath.Join(".tools", e.Name, "node_modules", e.Name) }

// Server is an emulator of the test's own, stopped when the test ends.
type Server struct {
	// URL is the endpoint: http://127.0.0.1:port.
	URL    string
	cmd    *exec.Cmd
	exited chan struct{}
}

// Start starts the emulator with node, or skips the test (fails it under
// CI=true) when node or the package is missing.
func (e Emulator) Start(t testing.TB) *Server {
	t.Helper()
	NoAWSMetadata()
	node, err := exec.LookPath("node")
	if err != nil {
		Unavailable(t, "node is not installed ("+e.Name+" runs on it)", err)
	}
	dir, err := e.find()
	if err != nil {
		Unavailable(t, fmt.Sprintf("%s is not installed (.ci/run installs it: npm install --prefix .tools/%s %s@%s)",
			e.Name, e.Name, e.Name, e.Version), err)
	}
	port := FreePort(t)
	s := &Server{URL: fmt.Sprintf("http://127.0.0.1:%d", port), exited: make(chan struct{})}
	s.cmd = exec.Command(node, "--input-type=module", "-e", e.Launcher)
	s.cmd.Env = append(os.Environ(), "PACKAGE="+dir, "PORT="+strconv.Itoa(port))
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	s.cmd.Stderr = &stderr
	OrphanGuard(s.cmd)
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", e.Name, err)
	}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		ready <- sc.Scan() && sc.Text() == "listening"
		for sc.Scan() {
		}
		_ = s.cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(s.stop)
	select {
	case ok := <-ready:
		if !ok {
			<-s.exited
			t.Fatalf("%s did not start: %s", e.Name, stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("%s on %s not listening after 60s", e.Name, s.URL)
	}
	return s
}

// find returns the package's directory.
func (e Emulator) find() (string, error) {
	if dir := os.Getenv(e.Env); dir != "" {
		return dir, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if isMainModule(dir) {
			pkg := filepath.Join(dir, e.Dir())
			if !FileExists(filepath.Join(pkg, "package.json")) {
				return "", fmt.Errorf("no %s", pkg)
			}
			return pkg, nil
		}
		if filepath.Dir(dir) == dir {
			return "", errors.New("no go.mod of module github.com/heraldhq/herald above the working directory")
		}
	}
}

// isMainModule reports whether dir holds Herald's main go.mod, under which
// .tools is (a test of the integration module runs a directory below its
// own go.mod).
func isMainModule(dir string) bool {
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	return err == nil && strings.HasPrefix(string(data), "module github.com/heraldhq/herald\n")
}

func (s *Server) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}
