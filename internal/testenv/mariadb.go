package testenv

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// MariaDB is a mariadbd of a test's own, on its own port and data
// directory, for tests that kill the database under a running program. It
// is killed when the test ends.
type MariaDB struct {
	Port int
	bin  string
	dir  string
	cmd  *exec.Cmd
	done chan struct{}
	// Settings are extra server options passed at every Start; without
	// any the server runs with --skip-log-bin.
	Settings []string
}

// NewMariaDB creates a data directory (mariadb-install-db) and picks a
// port, without starting the server; it skips the test (fails it under
// CI=true) when MariaDB is not installed.
func NewMariaDB(t testing.TB) *MariaDB {
	t.Helper()
	bin, err := exec.LookPath("mariadbd")
	if err != nil {
		Unavailable(t, "mariadbd is not installed", err)
	}
	install, err := exec.LookPath("mariadb-install-db")
	if err != nil {
		Unavailable(t, "mariadb-install-db is not installed", err)
	}
	dir := t.TempDir()
	// Each server gets a temporary directory of its own: in a shared /tmp,
	// servers set up at once by tests running in parallel have been seen
	// to lose each other's temporary tables ("Can't find file
	// '/tmp/#sql-temptable-….MAI'").
	tmp := filepath.Join(dir, "tmp")
	if err := os.MkdirAll(tmp, 0o777); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(install, "--no-defaults", "--datadir="+filepath.Join(dir, "data"), "--user="+userName(),
		"--auth-root-authentication-method=normal", "--skip-test-db", "--tmpdir="+tmp).CombinedOutput()
	if err != nil {
		t.Fatalf("mariadb-install-db: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	m := &MariaDB{Port: port, bin: bin, dir: dir}
	t.Cleanup(m.Kill)
	return m
}

func userName() string {
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "root"
}

// DSN is the server's DSN for database db (go-sql-driver form).
func (m *MariaDB) DSN(db string) string {
	return "root@tcp(127.0.0.1:" + strconv.Itoa(m.Port) + ")/" + db
}

// Start starts the server (again) and waits until its port accepts
// connections.
func (m *MariaDB) Start(t testing.TB) {
	t.Helper()
	m.cmd = exec.Command(m.bin, "--no-defaults", "--datadir="+filepath.Join(m.dir, "data"),
		"--port="+strconv.Itoa(m.Port), "--bind-address=127.0.0.1", "--socket="+filepath.Join(m.dir, "sock"),
		"--pid-file="+filepath.Join(m.dir, "pid"), "--user="+userName(), "--innodb-buffer-pool-size=32M",
		"--tmpdir="+filepath.Join(m.dir, "tmp"))
	if len(m.Settings) == 0 {
		m.cmd.Args = append(m.cmd.Args, "--skip-log-bin")
	}
	m.cmd.Args = append(m.cmd.Args, m.Settings...)
	m.cmd.Stdout, m.cmd.Stderr = nil, nil
	if err := m.cmd.Start(); err != nil {
		t.Fatalf("start mariadbd: %v", err)
	}
	m.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { _ = cmd.Wait(); close(done) }(m.cmd, m.done)
	WaitFor(t, 60*time.Second, 50*time.Millisecond, "mariadbd on port "+strconv.Itoa(m.Port), func() bool {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(m.Port), time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}

// Kill SIGKILLs the server, as a crash would, and waits until it is gone.
func (m *MariaDB) Kill() {
	if m.cmd == nil {
		return
	}
	_ = m.cmd.Process.Signal(syscall.SIGKILL)
	<-m.done
	m.cmd = nil
}

// BinlogSettings are the server options a binlog log lane needs: the
// binary log on, row format with full images, and a server id.
var BinlogSettings = []string{"--log-bin=binlog", "--binlog-format=ROW", "--binlog-row-image=FULL", "--server-id=1"}

// NewBinlogMariaDB starts a mariadbd of the test's own with the binary log
// in row format (for binlog log lanes; the shared server has none) and
// returns it with the DSN of its database herald, created empty. Extra
// options (e.g. "--binlog-format=MIXED") replace the matching defaults.
func NewBinlogMariaDB(t testing.TB, extra ...string) (*MariaDB, string) {
	t.Helper()
	m := NewMariaDB(t)
	m.Settings = append(append([]string{}, BinlogSettings...), extra...)
	m.Start(t)
	WaitFor(t, 30*time.Second, 100*time.Millisecond, "create database herald", func() bool {
		return m.Exec("CREATE DATABASE IF NOT EXISTS herald") == nil
	})
	return m, m.DSN("herald")
}

// Exec runs one statement as root through the mariadb client.
func (m *MariaDB) Exec(stmt string) error {
	out, err := exec.Command("mariadb", "--no-defaults", "-uroot", "-h127.0.0.1", "-P"+strconv.Itoa(m.Port), "-e", stmt).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v: %s", stmt, err, out)
	}
	return nil
}
