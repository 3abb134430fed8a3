package redisstore_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stagedoor/once/internal/testservers"
)

// privateRedis starts a Redis server of the test's own (redis-server from
// PATH, or REDIS_SERVER, as scripts/redis-cluster.sh) listening on a Unix
// socket only, so that it takes no TCP port, with args added to its
// command line, and stops it when tb ends. It is for what a test must not
// do to the shared servers: ACL users, a password, a script that keeps
// the server busy. It returns the options to reach it (Network "unix");
// a missing redis-server skips tb, or fails it when servers are required.
func privateRedis(tb testing.TB, args ...string) *redis.Options {
	tb.Helper()
	bin := os.Getenv("REDIS_SERVER")
	if bin == "" {
		bin = "redis-server"
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		testservers.Unavailable(tb, "redis-server for a private server", err)
	}
	// A short directory: a socket path is at most 107 bytes.
	dir, err := os.MkdirTemp("", "once-redis-")
	if err != nil {
		tb.Fatal(err)
	}
	sock := filepath.Join(dir, "redis.sock")
	cmd := exec.Command(path, append([]string{
		"--port", "0", "--unixsocket", sock, "--unixsocketperm", "700",
		"--dir", dir, "--save", "", "--appendonly", "no", "--logfile", filepath.Join(dir, "redis.log"),
	}, args...)...)
	if err := cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = os.RemoveAll(dir)
	})
	opt := &redis.Options{Network: "unix", Addr: sock, MaxRetries: -1}
	// Wait for it to answer: a generous bound on a loaded machine, not an
	// assertion about speed.
	c := redis.NewClient(&redis.Options{Network: "unix", Addr: sock, MaxRetries: -1, Password: passwordOf(args)})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		err := c.Ping(ctx).Err()
		if err == nil {
			return opt
		}
		select {
		case <-ctx.Done():
			log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
			tb.Fatalf("private redis-server did not answer: %v\n%s", err, log)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// passwordOf returns the value of --requirepass in args, or "".
func passwordOf(args []string) string {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "--requirepass" {
			return args[i+1]
		}
	}
	return ""
}
