package testenv

import (
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Postgres is a PostgreSQL server of a test's own, on its own port and data
// directory, for tests that kill the database under a running program. It
// is killed when the test ends. PostgreSQL refuses to run as root, so when
// the test runs as root the server runs as the postgres user.
type Postgres struct {
	Port int
	bin  string
	dir  string
	cred *syscall.Credential
	cmd  *exec.Cmd
	done chan struct{}
	// Settings are extra server settings (name=value) passed with -c at
	// every Start, e.g. "wal_level=logical".
	Settings []string
}

// NewPostgres creates a data directory (initdb, trust authentication) and
// picks a port, without starting the server; it skips the test (fails it
// under CI=true) when PostgreSQL is not installed.
func NewPostgres(t testing.TB) *Postgres {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	if len(bins) == 0 {
		Unavailable(t, "PostgreSQL server binaries are not installed", os.ErrNotExist)
	}
	p := &Postgres{bin: bins[len(bins)-1]}
	// Under /tmp (not t.TempDir, whose parents are private to root), so the
	// postgres user can reach it.
	dir, err := os.MkdirTemp("", "herald-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p.dir = dir
	if os.Geteuid() == 0 {
		p.cred = postgresUser(t)
		if err := os.Chown(dir, int(p.cred.Uid), int(p.cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	initdb := p.command(filepath.Join(p.bin, "initdb"), "-D", filepath.Join(dir, "data"), "-U", "postgres",
		"--auth=trust", "--no-sync", "-E", "UTF8")
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.Port = ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	t.Cleanup(p.Kill)
	return p
}

// postgresUser is the credential of the postgres system user.
func postgresUser(t testing.TB) *syscall.Credential {
	u, err := user.Lookup("postgres")
	if err != nil {
		Unavailable(t, "no postgres user to run a PostgreSQL server as (running as root)", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}

// command runs a PostgreSQL program as the server's user, in its own
// process group so that Kill takes the backends too.
func (p *Postgres) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred, Setpgid: true}
	return cmd
}

// DSN is the server's URL for database db.
func (p *Postgres) DSN(db string) string {
	return "postgres://postgres@127.0.0.1:" + strconv.Itoa(p.Port) + "/" + db + "?sslmode=disable"
}

// Start starts the server (again) and waits until its port accepts
// connections.
func (p *Postgres) Start(t testing.TB) {
	t.Helper()
	args := []string{"-D", filepath.Join(p.dir, "data"),
		"-p", strconv.Itoa(p.Port), "-k", p.dir, "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"}
	for _, kv := range p.Settings {
		args = append(args, "-c", kv)
	}
	p.cmd = p.command(filepath.Join(p.bin, "postgres"), args...)
	if os.Getenv("HERALD_PG_LOG") != "" {
		p.cmd.Stderr = os.Stderr
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start postgres: %v", err)
	}
	p.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { _ = cmd.Wait(); close(done) }(p.cmd, p.done)
	WaitFor(t, 60*time.Second, 50*time.Millisecond, "postgres on port "+strconv.Itoa(p.Port), func() bool {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(p.Port), time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}

// Kill SIGKILLs the server and its backends, as a crash would, and waits
// until the postmaster is gone.
func (p *Postgres) Kill() {
	if p.cmd == nil {
		return
	}
	pid := p.cmd.Process.Pid
	// Backends leave the postmaster's process group (setsid), so they are
	// found by parent and killed with it, as a machine crash would stop
	// them; a server started while one lingers would refuse to run
	// ("pre-existing shared memory block is still in use").
	children := childPIDs(pid)
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	for _, c := range children {
		_ = syscall.Kill(c, syscall.SIGKILL)
	}
	<-p.done
	for deadline := time.Now().Add(10 * time.Second); anyAlive(children) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	p.cmd = nil
}

// NewLogicalPostgres starts a PostgreSQL of the test's own with
// wal_level=logical (for log lanes) and the extra settings (name=value),
// and returns it with the URL of its database herald, created empty.
func NewLogicalPostgres(t testing.TB, settings ...string) (*Postgres, string) {
	t.Helper()
	p := NewPostgres(t)
	p.Settings = append([]string{"wal_level=logical", "max_replication_slots=10", "max_wal_senders=10"}, settings...)
	p.Start(t)
	WaitFor(t, 30*time.Second, 100*time.Millisecond, "createdb herald", func() bool {
		createdb := p.command(filepath.Join(p.bin, "createdb"), "-h", "127.0.0.1", "-p", strconv.Itoa(p.Port), "-U", "postgres", "herald")
		return createdb.Run() == nil || p.hasDB()
	})
	return p, p.DSN("herald")
}

// CommitTrap are the settings of a server on which a session that sets
// synchronous_commit = on commits into the WAL (where logical decoding
// reads it) and then waits, invisible to other sessions, for a standby that
// never comes; every other session commits as usual (synchronous_commit =
// local). pg_cancel_backend ends the wait and makes the commit visible.
// Tests use it to hold a transaction in the window between its commit
// record and its visibility, which a busy machine opens by chance.
var CommitTrap = []string{"synchronous_standby_names=herald_no_such_standby", "synchronous_commit=local"}

// hasDB reports whether the database herald exists (a createdb that ran
// into the server's start-up may have created it on an earlier try).
func (p *Postgres) hasDB() bool {
	out, err := p.command(filepath.Join(p.bin, "psql"), "-h", "127.0.0.1", "-p", strconv.Itoa(p.Port), "-U", "postgres",
		"-Atc", "SELECT 1 FROM pg_database WHERE datname = 'herald'").Output()
	return err == nil && len(out) > 0
}

// childPIDs lists the processes whose parent is pid (Linux /proc; none
// elsewhere).
func childPIDs(pid int) []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []int
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces: read after ')'.
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			if c, err := strconv.Atoi(filepath.Base(filepath.Dir(f))); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// anyAlive reports whether any of pids still runs (a zombie does not).
func anyAlive(pids []int) bool {
	for _, pid := range pids {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		if fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]); len(fields) > 0 && fields[0] != "Z" {
			return true
		}
	}
	return false
}
