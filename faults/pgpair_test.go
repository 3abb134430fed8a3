package faults

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/stagedoor/once/internal/testservers"
)

// pgPair is a PostgreSQL primary and a streaming replica of the suite's
// own, on free loopback ports, in a temporary directory deleted when the
// test ends (servers stopped, on failure too). The shared server on 5432 is
// never touched. The replica reaches the primary through a proxy (link), so
// that the replication stream can be delayed and cut. When the test runs as
// root, the server programs run as the postgres OS user, as
// scripts/services.sh does (initdb and postgres refuse root).
type pgPair struct {
	t       testing.TB
	bin     string
	root    string
	asPG    bool
	primary pgNode
	replica pgNode
	link    *netProxy
}

// pgNode is one server of a pgPair.
type pgNode struct {
	name string // "primary", or "replica1": the replica's application_name
	data string
	port int
}

// replicaName is the replica's cluster_name, which its walreceiver sends
// as application_name: the name synchronous_standby_names lists.
const replicaName = "replica1"

// startPgPair initdbs and starts the primary with settings (name=value,
// no spaces), makes the replica with pg_basebackup -R through the link,
// starts it, and waits until the primary reports it streaming, in sync
// state when synchronous_standby_names is among settings.
func startPgPair(t testing.TB, settings []string) *pgPair {
	t.Helper()
	bin, err := pgBinDir()
	if err != nil {
		testservers.Unavailable(t, "PostgreSQL server programs (initdb, pg_basebackup)", err)
	}
	p := &pgPair{t: t, bin: bin, asPG: os.Geteuid() == 0}
	if p.root, err = os.MkdirTemp("", "once-failover-"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.teardown)
	if err := os.Chmod(p.root, 0o755); err != nil {
		t.Fatal(err)
	}
	if p.asPG {
		if err := chownToPostgres(p.root); err != nil {
			testservers.Unavailable(t, "the postgres OS user (to run PostgreSQL as root)", err)
		}
	}
	p.primary = pgNode{name: "primary", data: filepath.Join(p.root, "primary"), port: freePort(t)}
	p.replica = pgNode{name: replicaName, data: filepath.Join(p.root, replicaName), port: freePort(t)}
	if err := p.run("initdb", "-D", p.primary.data, "-U", "postgres", "-E", "UTF8", "--no-sync", "--auth=trust"); err != nil {
		t.Fatal(err)
	}
	if err := p.start(p.primary, settings); err != nil {
		t.Fatal(err)
	}
	p.link = newProxy(t, fmt.Sprintf("127.0.0.1:%d", p.primary.port))
	// -R writes primary_conninfo naming the link.
	conninfo := fmt.Sprintf("host=127.0.0.1 port=%s user=postgres", strings.TrimPrefix(p.link.addr(), "127.0.0.1:"))
	if err := p.run("pg_basebackup", "-d", conninfo, "-D", p.replica.data, "-R", "-X", "stream", "-c", "fast"); err != nil {
		t.Fatal(err)
	}
	// A standby whose walreceiver lost its primary waits
	// wal_retrieve_retry_interval (5 s by default) before it acts on a
	// promote request: shortened, so that the run measures the failover,
	// not that wait.
	if err := p.start(p.replica, []string{"cluster_name=" + replicaName, "wal_retrieve_retry_interval=100ms"}); err != nil {
		t.Fatal(err)
	}
	want := "async"
	if slices.ContainsFunc(settings, func(s string) bool { return strings.HasPrefix(s, "synchronous_standby_names=") }) {
		want = "sync"
	}
	p.poll(p.primary, 30*time.Second, "the replica streaming ("+want+")",
		`SELECT count(*) = 1 FROM pg_stat_replication WHERE application_name = $1 AND state = 'streaming' AND sync_state = $2`,
		replicaName, want)
	return p
}

// url is a connection URL of one server.
func (p *pgPair) url(n pgNode) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=2", n.port)
}

// clientURL names both servers with target_session_attrs=read-write, as an
// application behind a failover does: a new connection goes to whichever
// of them accepts writes.
func (p *pgPair) clientURL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=2&target_session_attrs=read-write",
		p.primary.port, p.replica.port)
}

// waitCaughtUp waits until the replica has replayed everything the primary
// had written when it was called.
func (p *pgPair) waitCaughtUp() {
	p.t.Helper()
	p.poll(p.primary, 30*time.Second, "the replica to replay the primary's WAL",
		`SELECT count(*) = 1 FROM pg_stat_replication WHERE application_name = $1 AND replay_lsn >= $2::pg_lsn`,
		replicaName, p.query(p.primary, `SELECT pg_current_wal_lsn()::text`))
}

// freezePrimary stops the primary's postmaster (SIGSTOP), so that it
// starts no process, and lists it with every process it started; those
// keep serving until they are killed.
func (p *pgPair) freezePrimary() []int {
	p.t.Helper()
	pid, err := postmasterPid(p.primary.data)
	if err != nil {
		p.t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		p.t.Fatal(err)
	}
	return append([]int{pid}, childPids(pid)...)
}

// kill sends SIGKILL to pids and waits until they are gone.
func (p *pgPair) kill(pids []int) {
	p.t.Helper()
	for _, q := range pids {
		_ = syscall.Kill(q, syscall.SIGKILL)
	}
	deadline := time.Now().Add(10 * time.Second)
	for slices.ContainsFunc(pids, alive) {
		if time.Now().After(deadline) {
			p.t.Fatalf("processes %v still alive after SIGKILL", pids)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// promote promotes the replica (pg_ctl promote) and waits until it accepts
// writes (pg_is_in_recovery() false).
func (p *pgPair) promote() {
	p.t.Helper()
	if err := p.run("pg_ctl", "-D", p.replica.data, "-W", "promote"); err != nil {
		p.t.Fatal(err)
	}
	p.poll(p.replica, 60*time.Second, "the promoted replica to leave recovery", `SELECT NOT pg_is_in_recovery()`)
}

// storeClock reads clock_timestamp() on n: the store's clock.
func (p *pgPair) storeClock(n pgNode) time.Time {
	p.t.Helper()
	var at time.Time
	p.withConn(n, func(ctx context.Context, c *pgx.Conn) error {
		return c.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&at)
	})
	return at
}

// waitStoreClock waits until n's clock has passed at.
func (p *pgPair) waitStoreClock(n pgNode, at time.Time) {
	p.t.Helper()
	p.poll(n, time.Until(at)+30*time.Second, "the store's clock to pass "+at.Format(time.RFC3339Nano),
		`SELECT clock_timestamp() >= $1`, at)
}

// poll runs query (one boolean) on n until it is true.
func (p *pgPair) poll(n pgNode, within time.Duration, what, query string, args ...any) {
	p.t.Helper()
	deadline := time.Now().Add(within)
	var last error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c, err := pgx.Connect(ctx, p.url(n))
		if err == nil {
			var ok bool
			err = c.QueryRow(ctx, query, args...).Scan(&ok)
			_ = c.Close(ctx)
			if err == nil && ok {
				cancel()
				return
			}
		}
		cancel()
		last = err
		time.Sleep(10 * time.Millisecond)
	}
	p.t.Fatalf("waited %v for %s on %s (last error: %v)", within, what, n.name, last)
}

// query returns the one text value of query on n.
func (p *pgPair) query(n pgNode, query string) string {
	p.t.Helper()
	var s string
	p.withConn(n, func(ctx context.Context, c *pgx.Conn) error { return c.QueryRow(ctx, query).Scan(&s) })
	return s
}

func (p *pgPair) withConn(n pgNode, f func(context.Context, *pgx.Conn) error) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, p.url(n))
	if err != nil {
		p.t.Fatalf("%s: %v", n.name, err)
	}
	defer func() { _ = c.Close(ctx) }()
	if err := f(ctx, c); err != nil {
		p.t.Fatalf("%s: %v", n.name, err)
	}
}

// start starts n (pg_ctl start, which waits until it accepts connections).
func (p *pgPair) start(n pgNode, settings []string) error {
	opts := []string{"-p", strconv.Itoa(n.port), "-k", p.root, "-c", "listen_addresses=127.0.0.1"}
	for _, s := range settings {
		opts = append(opts, "-c", s)
	}
	return p.run("pg_ctl", "-D", n.data, "-l", n.data+".log", "-w", "-t", "60", "-o", strings.Join(opts, " "), "start")
}

// run runs one of the server programs, as the postgres OS user when root.
func (p *pgPair) run(prog string, args ...string) error {
	path := filepath.Join(p.bin, prog)
	cmd := exec.Command(path, args...)
	if p.asPG {
		cmd = exec.Command("runuser", append([]string{"-u", "postgres", "--", path}, args...)...)
	}
	cmd.Dir = "/"
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", prog, strings.Join(args, " "), err, lastLines(string(out), 10))
	}
	return nil
}

// teardown stops whichever server still runs and deletes the directory.
func (p *pgPair) teardown() {
	for _, n := range []pgNode{p.replica, p.primary} {
		if n.data == "" {
			continue
		}
		if pid, err := postmasterPid(n.data); err == nil && alive(pid) {
			if err := p.run("pg_ctl", "-D", n.data, "-m", "immediate", "-w", "stop"); err != nil {
				p.t.Errorf("stopping the %s: %v", n.name, err)
			}
		}
	}
	if err := os.RemoveAll(p.root); err != nil {
		p.t.Errorf("removing %s: %v", p.root, err)
	}
}

// pgBinDir is the newest /usr/lib/postgresql/*/bin holding initdb, else
// the directory of initdb on PATH.
func pgBinDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	version := func(d string) int { v, _ := strconv.Atoi(filepath.Base(filepath.Dir(d))); return v }
	slices.SortFunc(dirs, func(a, b string) int { return version(b) - version(a) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	path, err := exec.LookPath("initdb")
	if err != nil {
		return "", err
	}
	return filepath.Dir(path), nil
}

func chownToPostgres(dir string) error {
	u, err := user.Lookup("postgres")
	if err != nil {
		return err
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return os.Chown(dir, uid, gid)
}

// postmasterPid reads the first line of data's postmaster.pid.
func postmasterPid(data string) (int, error) {
	b, err := os.ReadFile(filepath.Join(data, "postmaster.pid"))
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return strconv.Atoi(strings.TrimSpace(line))
}

// childPids lists the processes whose parent is pid.
func childPids(pid int) []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []int
	for _, s := range stats {
		b, err := os.ReadFile(s)
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			if c, err := strconv.Atoi(filepath.Base(filepath.Dir(s))); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// alive reports whether pid runs (exists and is not a zombie).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i >= 0 && len(b) > i+2 && b[i+2] != 'Z'
}
