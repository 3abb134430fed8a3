package sqlitestore

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stagedoor/once/backends"
)

// Several Stores opening one fresh file at once: the first switch to WAL
// mode returns SQLITE_BUSY without waiting for the busy handler, and Open
// failed at once. Migrate now retries it within LockTimeout.
func TestConcurrentOpenFreshFile(t *testing.T) {
	const rounds, openers = 150, 2
	var failed atomic.Int32
	for range rounds {
		path := tempDB(t)
		var wg sync.WaitGroup
		for range openers {
			wg.Go(func() {
				s, err := newMigrated(context.Background(), path, nil)
				if err != nil {
					failed.Add(1)
					t.Log(err)
					return
				}
				_ = s.Close()
			})
		}
		wg.Wait()
	}
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d of %d concurrent Opens of fresh files failed", n, rounds*openers)
	}
}

// A LockTimeout above SQLite's 32-bit millisecond range became
// busy_timeout 0, so every write failed at once with SQLITE_BUSY. It is
// clamped to MaxLockTimeout.
func TestLongLockTimeoutClamped(t *testing.T) {
	for _, bt := range []time.Duration{MaxLockTimeout, MaxLockTimeout + time.Millisecond, 30 * 24 * time.Hour, math.MaxInt64} {
		s := openStore(t, tempDB(t), &Config{LockTimeout: bt})
		var ms int64
		if err := s.writer.QueryRow("PRAGMA busy_timeout").Scan(&ms); err != nil {
			t.Fatal(err)
		}
		if ms != math.MaxInt32 {
			t.Errorf("LockTimeout %v: busy_timeout %d ms, want %d", bt, ms, math.MaxInt32)
		}
	}
}

// ":memory:" gave each pooled connection its own empty database, so every
// operation failed with an unexplained SQLITE_ERROR.
func TestMemoryPathRefused(t *testing.T) {
	s, err := New(":memory:", nil)
	var oe *ConfigError
	if !errors.As(err, &oe) || oe.Field != "path" {
		if s != nil {
			_ = s.Close()
		}
		t.Fatalf("New(:memory:): %v, want a *ConfigError for path", err)
	}
}

// The path is a file name, never a URI: "file:x.db", "file::memory:" and
// "x.db?mode=memory" each create a file of exactly that name, which keeps
// its records across Stores.
func TestPathIsAFileName(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, name := range []string{"file:x.db", "file::memory:", "x.db?mode=memory", "y.db#frag"} {
		ctx := context.Background()
		s, err := newMigrated(ctx, name, nil)
		if err != nil {
			t.Fatalf("Open(%q): %v", name, err)
		}
		p := backends.ClaimParams{Scope: "s", Key: "k", Owner: "a", Lease: time.Minute, Retention: time.Hour}
		if r, err := s.Claim(ctx, p); err != nil || !r.Claimed {
			t.Fatalf("%q: claim %+v %v", name, r, err)
		}
		_ = s.Close()
		if _, err := os.Stat(filepath.Join(".", name)); err != nil {
			t.Fatalf("%q: no file of that name: %v", name, err)
		}
		s = openStore(t, name, nil)
		p.Owner = "b"
		if r, err := s.Claim(ctx, p); err != nil || r.Claimed {
			t.Fatalf("%q: a second Store's claim %+v %v, want the first's pending record", name, r, err)
		}
	}
}
