package faults

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgPair is a PostgreSQL primary and a streaming replica of the suite's
// own, on free loopback ports, in a temporary directory deleted when the
// test ends (servers stopped, on failure too). The shared server on 5432 is
// never touched. The replica reaches the primary through a proxy (link), so
// that the replication stream can be delayed and cut.
type pgPair struct {
	pgPrograms
	t       testing.TB
	root    string
	primary pgNode
	replica pgNode
	link    *netProxy
	// primaryKilled: the primary's postmaster.pid is stale, its pid
	// possibly another process's by now.
	primaryKilled bool
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

// startPgPair starts the primary on a copy of template (see
// pgPrograms.initdb) with settings (name=value, no spaces), makes the
// replica with pg_basebackup -R, starts it streaming through the link,
// and waits until the primary reports it streaming, in sync state when
// synchronous_standby_names is among settings.
func startPgPair(t testing.TB, pg pgPrograms, template string, settings []string) *pgPair {
	t.Helper()
	p := &pgPair{pgPrograms: pg, t: t, root: pg.tempDir(t)}
	t.Cleanup(p.stop)
	p.primary = pgNode{name: "primary", data: filepath.Join(p.root, "primary"), port: freePort(t)}
	p.replica = pgNode{name: replicaName, data: filepath.Join(p.root, replicaName), port: freePort(t)}
	if err := p.run("cp", "-a", template, p.primary.data); err != nil {
		t.Fatal(err)
	}
	if err := p.start(p.primary, settings); err != nil {
		t.Fatal(err)
	}
	if err := p.run("pg_basebackup", "-d", fmt.Sprintf("host=127.0.0.1 port=%d user=postgres", p.primary.port),
		"-D", p.replica.data, "-R", "-X", "stream", "-c", "fast", "--no-sync"); err != nil {
		t.Fatal(err)
	}
	// The replica streams through the link: its primary_conninfo, last in
	// postgresql.auto.conf, overrides the one -R wrote.
	p.link = newProxy(t, fmt.Sprintf("127.0.0.1:%d", p.primary.port))
	if err := appendLine(filepath.Join(p.replica.data, "postgresql.auto.conf"),
		fmt.Sprintf("primary_conninfo = 'host=127.0.0.1 port=%s user=postgres'", strings.TrimPrefix(p.link.addr(), "127.0.0.1:"))); err != nil {
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
	children, err := childPids(pid)
	if err != nil {
		p.t.Fatal(err)
	}
	return append([]int{pid}, children...)
}

// killPrimary sends SIGKILL to the primary's processes (pids, from
// freezePrimary) and waits until they are gone.
func (p *pgPair) killPrimary(pids []int) {
	p.t.Helper()
	p.primaryKilled = true
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

// start starts n (pg_ctl start, which waits until it accepts connections)
// with fsync off: the servers' processes are killed, never the machine, so
// what is written survives in the page cache and fsync changes no outcome,
// while it makes a standby's start (which syncs its data directory) slow.
func (p *pgPair) start(n pgNode, settings []string) error {
	opts := []string{"-p", strconv.Itoa(n.port), "-k", p.root, "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"}
	for _, s := range settings {
		opts = append(opts, "-c", s)
	}
	return p.run("pg_ctl", "-D", n.data, "-l", n.data+".log", "-w", "-t", "60", "-o", strings.Join(opts, " "), "start")
}

// stop stops whichever server still runs (pg_ctl stop -m immediate), and
// logs the end of each server's log when the test failed.
func (p *pgPair) stop() {
	for _, n := range []pgNode{p.replica, p.primary} {
		if n.data == "" {
			continue
		}
		if b, err := os.ReadFile(n.data + ".log"); err == nil && p.t.Failed() {
			p.t.Logf("end of the %s's log:\n%s", n.name, lastLines(string(b), 30))
		}
		if n == p.primary && p.primaryKilled {
			continue
		}
		if pid, err := postmasterPid(n.data); err == nil && alive(pid) {
			_ = syscall.Kill(pid, syscall.SIGCONT) // if frozen by freezePrimary
			if err := p.run("pg_ctl", "-D", n.data, "-m", "immediate", "-w", "stop"); err != nil {
				p.t.Errorf("stopping the %s: %v", n.name, err)
			}
		}
	}
}

// appendLine appends line to the file at path, which keeps its owner.
func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(line + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
