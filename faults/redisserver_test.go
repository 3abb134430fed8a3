package faults

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stagedoor/once/internal/testservers"
)

// redisServer is a redis-server of the suite's own, on a free loopback
// port, with every write fsynced to its append-only file before it is
// acknowledged. The suite pauses and restarts it; the shared server on 6379
// is never touched.
type redisServer struct {
	port int
	dir  string
	cmd  *exec.Cmd
}

func startRedis(t testing.TB) *redisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if testservers.Required() {
			t.Fatalf("redis-server not installed: %v", err)
		}
		t.Skipf("redis-server not installed: %v", err)
	}
	_ = bin
	r := &redisServer{port: freePort(t), dir: t.TempDir()}
	if err := r.start(); err != nil {
		t.Fatalf("redis-server: %v", err)
	}
	t.Cleanup(r.kill)
	return r
}

// freePort returns a loopback port nothing listened on a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

func (r *redisServer) addr() string { return "127.0.0.1:" + strconv.Itoa(r.port) }

// start launches the server and waits until it answers.
func (r *redisServer) start() error {
	r.cmd = exec.Command("redis-server", "--port", strconv.Itoa(r.port), "--bind", "127.0.0.1",
		"--dir", r.dir, "--appendonly", "yes", "--appendfsync", "always", "--save", "",
		"--maxmemory-policy", "noeviction", "--loglevel", "warning")
	if err := r.cmd.Start(); err != nil {
		return err
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		c := newRedis(r.addr())
		err := c.Ping(context.Background()).Err()
		_ = c.Close()
		if err == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("redis-server on %d did not answer", r.port)
}

// kill sends SIGKILL to the server (the process this suite started) and
// reaps it.
func (r *redisServer) kill() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	_ = r.cmd.Process.Signal(syscall.SIGKILL)
	_ = r.cmd.Wait()
	r.cmd = nil
}

// restart kills the server with SIGKILL and starts it again on the same
// port and data: acknowledged writes come back from the AOF.
func (r *redisServer) restart() error {
	r.kill()
	return r.start()
}
