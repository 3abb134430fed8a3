package sqlitestore

import (
	"bufio"
	"context"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
)

func TestConformance(t *testing.T) {
	s := openStore(t, tempDB(t), nil)
	backendtest.Run(t, func(testing.TB) backends.Store { return s })
}

// TestConformanceSynchronousNormal runs the suite with one reader and
// synchronous=NORMAL, so replays and writes contend for few connections.
func TestConformanceSynchronousNormal(t *testing.T) {
	if testing.Short() {
		t.Skip("a variant of TestConformance; -short runs the default only")
	}
	s := openStore(t, tempDB(t), &Config{Synchronous: "normal", Readers: 1})
	backendtest.Run(t, func(testing.TB) backends.Store { return s })
}

func BenchmarkStore(b *testing.B) {
	s := openStore(b, tempDB(b), nil)
	backendtest.Benchmark(b, func(testing.TB) backends.Store { return s })
}

// startChild runs the test binary as a child writing to path in mode and
// returns it with its stdout lines.
func startChild(t *testing.T, path, scope, mode string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childDBEnv+"="+path, childScopeEnv+"="+scope, childModeEnv+"="+mode)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, bufio.NewScanner(out)
}

// kill9 sends SIGKILL to the child and waits for it to die.
func kill9(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	require.NoError(t, cmd.Process.Kill()) // SIGKILL on Unix
	err := cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "the child died of the signal")
	require.False(t, exit.Exited(), "killed, not exited")
}

// TestReplaysAfterKill9: an outcome a child process recorded before it was
// killed with SIGKILL replays in the parent, which opens the same file
// after the kill; fn does not run again.
func TestReplaysAfterKill9(t *testing.T) {
	path, scope := tempDB(t), backendtest.Scope(t)
	cmd, lines := startChild(t, path, scope, "complete")
	require.True(t, lines.Scan(), "child output")
	require.Equal(t, "ready", lines.Text())
	kill9(t, cmd)

	s := openStore(t, path, nil)
	out, err := once.DoOutcome(context.Background(), once.New(s).Scope(scope), "order-1", once.Fingerprint("fp"),
		func(context.Context) (string, error) {
			t.Error("fn ran again after the restart")
			return "charged twice", nil
		})
	require.NoError(t, err)
	require.Equal(t, once.Replayed, out.Status)
	require.Equal(t, "charged", out.Value)

	_, err = once.Do(context.Background(), once.New(s).Scope(scope), "order-1", once.Fingerprint("other"),
		func(context.Context) (string, error) { return "", nil })
	require.ErrorIs(t, err, once.ErrKeyReused, "the key stays bound to its payload across the restart")
}

// TestPendingClaimSurvivesKill9: a claim whose owner was killed mid-fn
// blocks duplicates until its lease ends, then is taken over.
func TestPendingClaimSurvivesKill9(t *testing.T) {
	path, scope := tempDB(t), backendtest.Scope(t)
	cmd, lines := startChild(t, path, scope, "pending")
	require.True(t, lines.Scan())
	require.Equal(t, "ready", lines.Text())
	kill9(t, cmd)

	s := openStore(t, path, nil)
	r, err := s.Claim(context.Background(), backends.ClaimParams{Scope: scope, Key: "order-1", Owner: "parent", Fingerprint: []byte("fp"), Lease: time.Minute, Retention: time.Hour})
	require.NoError(t, err)
	if !r.Claimed {
		require.Equal(t, backends.StatePending, r.Existing.State, "the dead child's claim is still there")
		require.LessOrEqual(t, r.Existing.LeaseRemaining, 300*time.Millisecond)
		backendtest.Elapse(t, s, r.Existing.LeaseRemaining)
		r, err = s.Claim(context.Background(), backends.ClaimParams{Scope: scope, Key: "order-1", Owner: "parent", Fingerprint: []byte("fp"), Lease: time.Minute, Retention: time.Hour})
		require.NoError(t, err)
	}
	require.True(t, r.Claimed)
	require.True(t, r.TookOver, "the dead owner's lease was taken over")
}

// TestKill9MidStream kills a child that completes keys as fast as it can:
// every key it reported done replays, at most the key in flight is missing
// or pending, and the file passes SQLite's integrity check.
func TestKill9MidStream(t *testing.T) {
	path, scope := tempDB(t), backendtest.Scope(t)
	cmd, lines := startChild(t, path, scope, "stream")
	last := -1
	for lines.Scan() && last < 200 {
		var i int
		_, err := fmtSscanf(lines.Text(), "done %d", &i)
		require.NoError(t, err, lines.Text())
		last = i
	}
	kill9(t, cmd)
	require.GreaterOrEqual(t, last, 200)

	s := openStore(t, path, nil)
	var ok string
	require.NoError(t, s.reader.QueryRow("PRAGMA integrity_check").Scan(&ok))
	require.Equal(t, "ok", ok)
	for i := 0; i <= last; i++ {
		key := "k" + itoa(i)
		r, err := s.Claim(context.Background(), backends.ClaimParams{Scope: scope, Key: key, Owner: "parent", Lease: time.Minute, Retention: time.Hour})
		require.NoError(t, err)
		require.False(t, r.Claimed, "%s was reported done before the kill", key)
		require.Equal(t, backends.StateCompleted, r.Existing.State, key)
	}
}

// fakeClock is a settable clock for Config.Now.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// TestClockOption: leases and retention follow Config.Now, and only it.
func TestClockOption(t *testing.T) {
	clock := &fakeClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	s := openStore(t, tempDB(t), &Config{Now: clock.Now})
	ctx := context.Background()
	claim := func(owner string) backends.ClaimResult {
		r, err := s.Claim(ctx, backends.ClaimParams{Scope: "s", Key: "k", Owner: owner, Lease: time.Minute, Retention: time.Hour})
		require.NoError(t, err)
		return r
	}
	require.True(t, claim("a").Claimed)
	clock.Advance(59 * time.Second)
	r := claim("b")
	require.False(t, r.Claimed)
	require.Equal(t, time.Second, r.Existing.LeaseRemaining, "exactly, on the fake clock")
	clock.Advance(time.Second)
	r = claim("b")
	require.True(t, r.Claimed)
	require.True(t, r.TookOver)
	ok, err := s.Complete(ctx, backends.CompleteParams{Scope: "s", Key: "k", Owner: "b", Outcome: []byte("v"), Retention: time.Hour})
	require.NoError(t, err)
	require.True(t, ok)
	got, err := s.Get(ctx, "s", "k")
	expiresIn := got.ExpiresIn
	found := got.State != 0
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, time.Hour, expiresIn)
	clock.Advance(time.Hour)
	got, err = s.Get(ctx, "s", "k")
	found = got.State != 0
	require.NoError(t, err)
	require.False(t, found, "expired exactly at its retention")
	n, err := s.Sweep(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
}

// TestExtremeDurations: the longest time.Duration and a clock far in the
// future never wrap into a short lease; one nanosecond is one microsecond.
func TestExtremeDurations(t *testing.T) {
	require.Equal(t, int64(math.MaxInt64), deadline(math.MaxInt64-5, time.Hour), "saturates")
	require.Equal(t, time.Duration(math.MaxInt64), remaining(0, math.MaxInt64))
	require.Equal(t, time.Duration(math.MinInt64), remaining(math.MaxInt64, math.MinInt64))
	require.Equal(t, time.Duration(math.MaxInt64), remaining(math.MinInt64, math.MaxInt64))

	for _, at := range []time.Time{time.Now(), time.Date(294000, 1, 1, 0, 0, 0, 0, time.UTC)} {
		clock := &fakeClock{now: at}
		s := openStore(t, tempDB(t), &Config{Now: clock.Now})
		ctx := context.Background()
		r, err := s.Claim(ctx, backends.ClaimParams{Scope: "s", Key: "k", Owner: "a", Lease: math.MaxInt64, Retention: time.Nanosecond})
		require.NoError(t, err)
		require.True(t, r.Claimed)
		clock.Advance(1000 * time.Hour)
		r, err = s.Claim(ctx, backends.ClaimParams{Scope: "s", Key: "k", Owner: "b", Lease: time.Minute, Retention: time.Hour})
		require.NoError(t, err)
		require.False(t, r.Claimed, "at %v: the huge lease is still live", at)
		require.Greater(t, r.Existing.LeaseRemaining, time.Duration(0))
		ok, err := s.Renew(ctx, backends.RenewParams{Scope: "s", Key: "k", Owner: "a", Lease: math.MaxInt64})
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = s.Complete(ctx, backends.CompleteParams{Scope: "s", Key: "k", Owner: "a", Outcome: []byte("v"), Retention: math.MaxInt64})
		require.NoError(t, err)
		require.True(t, ok)
		clock.Advance(1000 * time.Hour)
		got, err := s.Get(ctx, "s", "k")
		expiresIn := got.ExpiresIn
		found := got.State != 0
		require.NoError(t, err)
		require.True(t, found)
		require.Greater(t, expiresIn, time.Duration(0))
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	for _, c := range []struct {
		path  string
		cfg   Config
		field string
	}{
		{"", Config{}, "path"},
		{"a\x00b", Config{}, "path"},
		{"x.db", Config{Table: "bad-name"}, "Table"},
		{"x.db", Config{Table: `x"; DROP TABLE y; --`}, "Table"},
		{"x.db", Config{Table: "1abc"}, "Table"},
		{"x.db", Config{Table: strings.Repeat("t", maxTableLen+1)}, "Table"},
		{"x.db", Config{Synchronous: "OFF"}, "Synchronous"},
	} {
		_, err := New(c.path, &c.cfg)
		var oe *ConfigError
		require.ErrorAs(t, err, &oe, "%q %+v", c.path, c.cfg)
		require.Equal(t, c.field, oe.Field)
	}
}

// TestOddPaths: a path with URI-special characters names that very file.
func TestOddPaths(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a?b.db", "c#d.db", "e%20f.db", "g h.db", "é.db"} {
		path := filepath.Join(dir, name)
		s := openStore(t, path, nil)
		r, err := s.Claim(context.Background(), backends.ClaimParams{Scope: "s", Key: "k", Owner: "o", Lease: time.Minute, Retention: time.Hour})
		require.NoError(t, err)
		require.True(t, r.Claimed)
		_, err = os.Stat(path)
		require.NoError(t, err, "%s: the file has the given name", name)
	}
}

func TestMigrateErrors(t *testing.T) {
	_, err := newMigrated(context.Background(), filepath.Join(t.TempDir(), "missing-dir", "x.db"), nil)
	var e *Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, "migrate", e.Op)

	notDB := filepath.Join(t.TempDir(), "garbage.db")
	require.NoError(t, os.WriteFile(notDB, []byte(strings.Repeat("not a database ", 100)), 0o600))
	_, err = newMigrated(context.Background(), notDB, nil)
	require.ErrorAs(t, err, &e)
	require.Contains(t, e.Error(), "not a database")
}

func TestClosedStore(t *testing.T) {
	s, err := newMigrated(context.Background(), tempDB(t), nil)
	require.NoError(t, err)
	changed, stop, err := s.Watch(context.Background(), "s", "k")
	require.NoError(t, err)
	defer stop()
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "idempotent")
	select {
	case <-changed:
	default:
		t.Fatal("Close wakes the watchers")
	}
	_, err = s.Claim(context.Background(), backends.ClaimParams{Scope: "s", Key: "k", Owner: "o", Lease: time.Minute, Retention: time.Hour})
	require.ErrorIs(t, err, backends.ErrClosed)
	_, err = s.Complete(context.Background(), backends.CompleteParams{Scope: "s", Key: "k", Owner: "o", Outcome: []byte("v"), Retention: time.Hour})
	require.ErrorIs(t, err, backends.ErrClosed)
}

func TestCancelledContextIsTyped(t *testing.T) {
	s := openStore(t, tempDB(t), nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Claim(ctx, backends.ClaimParams{Scope: "s", Key: "k", Owner: "o", Lease: time.Minute, Retention: time.Hour})
	require.ErrorIs(t, err, context.Canceled)
	var e *Error
	require.ErrorAs(t, err, &e)
}

// TestMigrate: reopening is a no-op, the exported files are the embedded
// ones, and a custom table is used throughout.
func TestMigrate(t *testing.T) {
	path := tempDB(t)
	s := openStore(t, path, &Config{Table: "custom_records"})
	require.NoError(t, s.Migrate(context.Background()))
	require.NoError(t, s.Close())
	s = openStore(t, path, &Config{Table: "custom_records"})
	var n int
	require.NoError(t, s.reader.QueryRow(`SELECT COUNT(*) FROM "custom_records_migrations"`).Scan(&n))
	require.Equal(t, 1, n)
	require.NoError(t, s.reader.QueryRow(`SELECT COUNT(*) FROM sqlite_master WHERE name IN ('custom_records', 'custom_records_expires_at_idx', 'custom_records_held_idx')`).Scan(&n))
	require.Equal(t, 3, n)
	require.NoError(t, s.reader.QueryRow(`SELECT COUNT(*) FROM sqlite_master WHERE name LIKE 'once_records%'`).Scan(&n))
	require.Zero(t, n)
	var mode string
	require.NoError(t, s.reader.QueryRow(`PRAGMA journal_mode`).Scan(&mode))
	require.Equal(t, "wal", mode)

	names, err := fs.Glob(Migrations(), "*.sql")
	require.NoError(t, err)
	require.Equal(t, []string{"001_create_records.down.sql", "001_create_records.up.sql"}, names)
}

// TestTwoStoresOneFile: a second Store (as a second process would) on the
// same file stays correct: exactly one of many racing claims wins.
func TestTwoStoresOneFile(t *testing.T) {
	path := tempDB(t)
	a, b := openStore(t, path, nil), openStore(t, path, nil)
	var winners atomic.Int32
	var wg sync.WaitGroup
	for i := range 16 {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() {
			r, err := s.Claim(context.Background(), backends.ClaimParams{Scope: "s", Key: "hot", Owner: backendtest.Token(), Lease: time.Minute, Retention: time.Hour})
			if err != nil {
				t.Error(err)
				return
			}
			if r.Claimed {
				winners.Add(1)
			}
		})
	}
	wg.Wait()
	require.EqualValues(t, 1, winners.Load())
}

// TestTableNamesIgnoreCase: SQLite's identifiers ignore ASCII case, so
// "Once_Case" and "once_case" name one table, with one index and one
// versions table: two Stores given them share every record, as two Stores
// given one name do (MySQL, whose procedure names ignore case and whose
// table names need not, refuses upper case for that reason). The second
// Open's Migrate finds every version applied.
func TestTableNamesIgnoreCase(t *testing.T) {
	path := tempDB(t)
	upper := openStore(t, path, &Config{Table: "Once_Case"})
	lower := openStore(t, path, &Config{Table: "once_case"})
	ctx := context.Background()
	p := backends.ClaimParams{Scope: "s", Key: "k", Owner: backendtest.Token(), Lease: time.Minute, Retention: time.Hour}
	r, err := upper.Claim(ctx, p)
	require.NoError(t, err)
	require.True(t, r.Claimed)
	ok, err := upper.Complete(ctx, backends.CompleteParams{Scope: "s", Key: "k", Owner: p.Owner, Outcome: []byte("v"), Retention: time.Hour})
	require.NoError(t, err)
	require.True(t, ok)
	p.Owner = backendtest.Token()
	r, err = lower.Claim(ctx, p)
	require.NoError(t, err)
	require.False(t, r.Claimed)
	require.Equal(t, "v", string(r.Existing.Outcome))
	var tables int
	require.NoError(t, lower.reader.QueryRowContext(ctx,
		"SELECT COUNT(*) FROM sqlite_schema WHERE type = 'table' AND name LIKE 'once_case%'").Scan(&tables))
	require.Equal(t, 2, tables, "the records table and its versions table, once each")
}

// TestReplayWritesNothing: a replay leaves the file's change counter as it
// was.
func TestReplayWritesNothing(t *testing.T) {
	s := openStore(t, tempDB(t), nil)
	ctx := context.Background()
	_, err := s.Claim(ctx, backends.ClaimParams{Scope: "s", Key: "k", Owner: "o", Lease: time.Minute, Retention: time.Hour})
	require.NoError(t, err)
	_, err = s.Complete(ctx, backends.CompleteParams{Scope: "s", Key: "k", Owner: "o", Outcome: []byte("v"), Retention: time.Hour})
	require.NoError(t, err)
	changes := func() int64 {
		var n int64
		require.NoError(t, s.writer.QueryRow("SELECT total_changes()").Scan(&n))
		return n
	}
	before := changes()
	for range 5 {
		r, err := s.Claim(ctx, backends.ClaimParams{Scope: "s", Key: "k", Owner: backendtest.Token(), Lease: time.Minute, Retention: time.Hour})
		require.NoError(t, err)
		require.Equal(t, []byte("v"), r.Existing.Outcome)
	}
	require.Equal(t, before, changes())
}

// TestWaitWakesOnCompletion: a once.Do waiting for a duplicate gets the
// outcome through Watch.
func TestWaitWakesOnCompletion(t *testing.T) {
	s := openStore(t, tempDB(t), nil)
	scope := once.New(s, once.WithWait(10*time.Second)).Scope("s")
	release := make(chan struct{})
	started := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		v, err := once.Do(context.Background(), scope, "k", nil, func(context.Context) (string, error) {
			close(started)
			<-release
			return "v", nil
		})
		require.NoError(t, err)
		require.Equal(t, "v", v)
	})
	<-started
	done := make(chan string, 1)
	wg.Go(func() {
		v, err := once.Do(context.Background(), scope, "k", nil, func(context.Context) (string, error) { return "ran twice", nil })
		require.NoError(t, err)
		done <- v
	})
	time.Sleep(50 * time.Millisecond)
	close(release)
	require.Equal(t, "v", <-done)
	wg.Wait()
}

// TestReplayWhileWriteLocked: a replay is a read on a read connection, so
// it answers while another connection (another process, say) holds the
// file's write lock; a claim of a new key waits for the lock instead.
func TestReplayWhileWriteLocked(t *testing.T) {
	path := tempDB(t)
	s := openStore(t, path, &Config{LockTimeout: 200 * time.Millisecond})
	ctx := context.Background()
	_, err := s.Claim(ctx, backends.ClaimParams{Scope: "s", Key: "done", Owner: "o", Lease: time.Minute, Retention: time.Hour})
	require.NoError(t, err)
	ok, err := s.Complete(ctx, backends.CompleteParams{Scope: "s", Key: "done", Owner: "o", Outcome: []byte("v"), Retention: time.Hour})
	require.NoError(t, err)
	require.True(t, ok)

	other := openStore(t, path, nil)
	conn, err := other.writer.Conn(ctx)
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	_, err = conn.ExecContext(ctx, "BEGIN IMMEDIATE")
	require.NoError(t, err)
	defer func() { _, _ = conn.ExecContext(ctx, "ROLLBACK") }()

	r, err := s.Claim(ctx, backends.ClaimParams{Scope: "s", Key: "done", Owner: "p", Lease: time.Minute, Retention: time.Hour})
	require.NoError(t, err, "a replay needs no write lock")
	require.Equal(t, []byte("v"), r.Existing.Outcome)

	_, err = s.Claim(ctx, backends.ClaimParams{Scope: "s", Key: "new", Owner: "p", Lease: time.Minute, Retention: time.Hour})
	var e *Error
	require.ErrorAs(t, err, &e, "a new claim waits LockTimeout for the lock, then fails typed")
	require.Contains(t, e.Error(), "busy")
}
