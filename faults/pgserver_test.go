package faults

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// pgServer is a PostgreSQL server of the suite's own, on a free loopback
// port, in a temporary directory deleted when the test ends (the server
// stopped first, on failure too), that the suite kills with SIGKILL and
// starts again. The shared server on 5432 is never touched.
type pgServer struct {
	pgPrograms
	t    testing.TB
	root string
	node pgNode
}

// startPgServer starts a server on a copy of template (see
// pgPrograms.initdb).
func startPgServer(t testing.TB, pg pgPrograms, template string) *pgServer {
	t.Helper()
	s := &pgServer{pgPrograms: pg, t: t, root: pg.tempDir(t)}
	s.node = pgNode{name: "server", data: filepath.Join(s.root, "data"), port: freePort(t)}
	t.Cleanup(s.stop)
	if err := s.run("cp", "-a", template, s.node.data); err != nil {
		t.Fatal(err)
	}
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
	return s
}

// url is the server's connection URL.
func (s *pgServer) url() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=2", s.node.port)
}

// start starts the server (pg_ctl start, which waits until it accepts
// connections), fsync off as pgPair's servers: only processes die.
func (s *pgServer) start() error {
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off", s.node.port, s.root)
	return s.run("pg_ctl", "-D", s.node.data, "-l", s.node.data+".log", "-w", "-t", "60", "-o", opts, "start")
}

// restart sends SIGKILL to the postmaster and every process it started,
// waits until they are gone, and starts the server again on the same data
// (crash recovery). The dead postmaster's lock files (postmaster.pid and
// the socket's .lock) are removed first: a postmaster refuses to start
// over a lock file whose pid answers kill(pid, 0), which a killed
// postmaster does as a zombie until its parent, init, reaps it (seen: the
// restart failed with "lock file ... already exists" half a second after
// the SIGKILL), and a reused pid would too.
func (s *pgServer) restart() error {
	pid, err := postmasterPid(s.node.data)
	if err != nil {
		return err
	}
	children, err := childPids(pid)
	if err != nil {
		return err
	}
	pids := append([]int{pid}, children...)
	for _, p := range pids {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	deadline := time.Now().Add(10 * time.Second)
	for slices.ContainsFunc(pids, alive) {
		if time.Now().After(deadline) {
			return fmt.Errorf("processes %v still alive after SIGKILL", pids)
		}
		time.Sleep(5 * time.Millisecond)
	}
	for _, f := range []string{filepath.Join(s.node.data, "postmaster.pid"), filepath.Join(s.root, fmt.Sprintf(".s.PGSQL.%d.lock", s.node.port))} {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return s.start()
}

// stop stops the server (pg_ctl stop -m immediate) if it runs, and logs
// the end of its log when the test failed.
func (s *pgServer) stop() {
	if b, err := os.ReadFile(s.node.data + ".log"); err == nil && s.t.Failed() {
		s.t.Logf("end of the server's log:\n%s", lastLines(string(b), 30))
	}
	if pid, err := postmasterPid(s.node.data); err == nil && alive(pid) {
		if err := s.run("pg_ctl", "-D", s.node.data, "-m", "immediate", "-w", "stop"); err != nil {
			s.t.Errorf("stopping the server: %v", err)
		}
	}
}
