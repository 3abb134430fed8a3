package sqlitestore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stagedoor/once"
)

// The restart tests re-execute the test binary as a child process: with
// childDBEnv set, TestMain runs the child's part instead of the tests.
const (
	childDBEnv    = "ONCE_SQLITE_CHILD_DB"
	childScopeEnv = "ONCE_SQLITE_CHILD_SCOPE"
	childModeEnv  = "ONCE_SQLITE_CHILD_MODE"
)

func TestMain(m *testing.M) {
	if path := os.Getenv(childDBEnv); path != "" {
		os.Exit(child(path, os.Getenv(childScopeEnv), os.Getenv(childModeEnv)))
	}
	os.Exit(m.Run())
}

// child writes records through once.Do and reports each on stdout once Do
// returned; then it waits to be killed.
//
//   - "complete": one key, "order-1", completed with "charged".
//   - "pending": one key, "order-1", whose fn never returns (a 300 ms
//     lease, renewed by the core while the child lives).
//   - "stream": keys k0, k1, … completed one after another as fast as it
//     can, each reported as "done <i>".
//   - "dotx": one key, "order-1", in once.DoTx, whose fn writes a row of
//     the table effects and never returns: the transaction stays open.
func child(path, scope, mode string) int {
	ctx := context.Background()
	s, err := newMigrated(ctx, path, nil)
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	k := once.New(s, once.WithLease(300*time.Millisecond))
	sc := k.Scope(scope)
	switch mode {
	case "complete":
		v, err := once.Do(ctx, sc, "order-1", once.Fingerprint("fp"), func(context.Context) (string, error) { return "charged", nil })
		if err != nil || v != "charged" {
			fmt.Println("error", v, err)
			return 1
		}
		fmt.Println("ready")
	case "pending":
		go func() {
			_, _ = once.Do(ctx, sc, "order-1", once.Fingerprint("fp"), func(context.Context) (string, error) {
				fmt.Println("ready")
				select {}
			})
		}()
	case "stream":
		for i := 0; ; i++ {
			key := fmt.Sprintf("k%d", i)
			v, err := once.Do(ctx, sc, key, nil, func(context.Context) (string, error) { return "v-" + key, nil })
			if err != nil || v != "v-"+key {
				fmt.Println("error", v, err)
				return 1
			}
			fmt.Println("done", i)
		}
	case "dotx":
		if _, err := s.writer.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS effects (k TEXT NOT NULL)"); err != nil {
			fmt.Println("error", err)
			return 1
		}
		go func() {
			_, _ = once.DoTx(ctx, sc, "order-1", nil, s.BeginTx, func(ctx context.Context, tx Tx) (string, error) {
				if _, err := tx.ExecContext(ctx, "INSERT INTO effects (k) VALUES ('order-1')"); err != nil {
					fmt.Println("error", err)
				}
				fmt.Println("ready")
				select {}
			})
		}()
	default:
		fmt.Println("error: unknown mode", mode)
		return 1
	}
	select {}
}

// tempDB returns a fresh database path in tb's temporary directory.
func tempDB(tb testing.TB) string {
	tb.Helper()
	return filepath.Join(tb.TempDir(), "once.db")
}

// newMigrated returns a migrated Store on path, as New and Migrate do.
func newMigrated(ctx context.Context, path string, cfg *Config) (*Store, error) {
	s, err := New(path, cfg)
	if err != nil {
		return nil, err
	}
	if err := s.Migrate(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// openStore opens a migrated Store on path, closed at the end of tb.
func openStore(tb testing.TB, path string, cfg *Config) *Store {
	tb.Helper()
	s, err := newMigrated(context.Background(), path, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

func fmtSscanf(s, format string, a ...any) (int, error) { return fmt.Sscanf(s, format, a...) }

func itoa(i int) string { return fmt.Sprint(i) }
