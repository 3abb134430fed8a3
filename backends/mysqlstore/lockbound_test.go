package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
)

// lockSlack is how much longer than LockTimeout (rounded up to a second)
// a bounded wait may take before the test's context ends it: far below the
// server's default innodb_lock_wait_timeout (50 s), which the tests leave
// in place, so an unbounded wait fails the test with a context error.
const lockSlack = 4 * time.Second

// holdInDoTx starts a once.DoTx on key whose fn blocks until the test ends, and
// returns once fn runs: the key's row is then locked by an uncommitted
// transaction. When lapsed is set, the key is first claimed on the pool
// with a lease that lapses, so that the DoTx takes it over (an UPDATE) and
// that owner's token is returned.
func holdInDoTx(t *testing.T, db *sql.DB, s *Store, scope, key string, lapsed bool) (oldOwner string) {
	t.Helper()
	ctx := context.Background()
	if lapsed {
		p := claimParams(scope, key)
		p.Lease = time.Millisecond
		r, err := s.Claim(ctx, p)
		require.NoError(t, err)
		require.True(t, r.Claimed)
		oldOwner = p.Owner
		time.Sleep(5 * time.Millisecond)
	}
	started, release, finished := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		_, err := once.DoTx(ctx, once.New(s).Scope(scope), key, once.Fingerprint("fp"), s.BeginTx, func(context.Context, Tx) (string, error) {
			close(started)
			<-release
			return "v", nil
		})
		if err != nil {
			t.Error(err)
		}
	}()
	t.Cleanup(func() { close(release); <-finished })
	select {
	case <-started:
	case <-finished:
		t.Fatal("DoTx returned before its fn ran")
	}
	return oldOwner
}

// boundedCtx is a context that ends lockSlack after LockTimeout d (rounded
// up to whole seconds, as the Store applies it).
func boundedCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(seconds(d))*time.Second+lockSlack)
	t.Cleanup(cancel)
	return ctx
}

// TestPoolWaitBoundedByLockTimeout: a pool operation that meets a key held
// by an uncommitted DoTx waits at most LockTimeout (not the session's
// innodb_lock_wait_timeout): a plain Do gets ErrInProgress, a Resolve
// reports the key pending, and the lapsed owner's writes and Admin's
// Delete fail with CodeLockWaitTimeout, in both claim modes and with a
// LockTimeout below the server's one-second resolution. Inserting first,
// the wait and the read after it cost LockTimeout once. The operations on
// one held key run concurrently, to keep the test short.
func TestPoolWaitBoundedByLockTimeout(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"insert-first", Config{LockTimeout: time.Second}},
		{"read-first", Config{LockTimeout: time.Second, ReadFirstClaims: true}},
		{"procedure", Config{LockTimeout: time.Second, OneRoundTripClaims: true}},
		{"sub-millisecond", Config{LockTimeout: time.Microsecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := newDB(t, nil)
			s := newStore(t, db, tc.cfg)
			name := backendtest.Scope(t)
			scope := once.New(s).Scope(name)
			fn := func(context.Context) (string, error) { return "", errors.New("fn ran on a held key") }
			for _, lapsed := range []bool{false, true} {
				key := map[bool]string{false: "new", true: "lapsed"}[lapsed]
				oldOwner := holdInDoTx(t, db, s, name, key, lapsed)
				ops := map[string]func(ctx context.Context) error{
					"Do": func(ctx context.Context) error {
						_, err := once.Do(ctx, scope, key, once.Fingerprint("fp"), fn)
						if !errors.Is(err, once.ErrInProgress) {
							return fmt.Errorf("want ErrInProgress, got %v", err)
						}
						return nil
					},
					"Resolve": func(ctx context.Context) error {
						res, err := s.Resolve(ctx, backends.ResolveParams{
							Scope: name, Key: key, Fingerprint: []byte("fp"), Outcome: []byte("r"), Owner: backendtest.Token(), Retention: time.Hour})
						if err != nil || res.Resolved || res.Existing.State != backends.StatePending {
							return fmt.Errorf("want the key reported pending, got %+v, %v", res, err)
						}
						return nil
					},
				}
				if lapsed {
					ops["Complete"] = func(ctx context.Context) error {
						_, err := s.Complete(ctx, backends.CompleteParams{Scope: name, Key: key, Owner: oldOwner, Outcome: []byte("late"), Retention: time.Hour})
						return lockTimedOut(err)
					}
					ops["Renew"] = func(ctx context.Context) error {
						_, err := s.Renew(ctx, backends.RenewParams{Scope: name, Key: key, Owner: oldOwner, Lease: time.Minute})
						return lockTimedOut(err)
					}
					ops["Checkpoint"] = func(ctx context.Context) error {
						_, err := s.Checkpoint(ctx, backends.CheckpointParams{Scope: name, Key: key, Owner: oldOwner, Steps: []byte("s")})
						return lockTimedOut(err)
					}
					ops["Release"] = func(ctx context.Context) error {
						_, err := s.Release(ctx, backends.ReleaseParams{Scope: name, Key: key, Owner: oldOwner})
						return lockTimedOut(err)
					}
					ops["Delete"] = func(ctx context.Context) error {
						_, err := s.Delete(ctx, name, key)
						return lockTimedOut(err)
					}
				}
				errs := make(map[string]chan error, len(ops))
				for op, run := range ops {
					ch, ctx := make(chan error, 1), boundedCtx(t, tc.cfg.LockTimeout)
					errs[op] = ch
					go func() { ch <- run(ctx) }()
				}
				for op, ch := range errs {
					require.NoError(t, <-ch, "%s on the %s key", op, key)
				}
			}
		})
	}
}

// lockTimedOut checks that err is the Store's *Error for a lock wait
// timeout, with no driver error reachable from it.
func lockTimedOut(err error) error {
	var myErr *mysql.MySQLError
	switch {
	case code(err) != CodeLockWaitTimeout:
		return fmt.Errorf("want an *Error of Code %d, got %v", CodeLockWaitTimeout, err)
	case errors.As(err, &myErr):
		return fmt.Errorf("a driver error escapes: %v", err)
	}
	return nil
}

// TestBoundStatementText checks the text both servers read: MariaDB's
// executable comment opens every locking statement, and MySQL's SET_VAR
// hint follows the statement's first keyword, where MySQL requires it (no
// MySQL server runs in these tests, so its placement is checked here). The
// lock-free reads carry neither.
func TestBoundStatementText(t *testing.T) {
	st := newStatements("t", 7)
	const mariadb = "/*M!100102 SET STATEMENT innodb_lock_wait_timeout=7 FOR */ "
	const mysqlHint = " /*+ SET_VAR(innodb_lock_wait_timeout=7) */ "
	for name, q := range map[string]string{
		"insertClaim": st.insertClaim, "takeover": st.takeover, "complete": st.complete,
		"renew": st.renew, "checkpoint": st.checkpoint, "release": st.release, "endLease": st.endLease,
		"delete": st.delete, "sweep": st.sweep,
	} {
		rest, ok := strings.CutPrefix(q, mariadb)
		require.True(t, ok, "%s: %s", name, q)
		verb, _, _ := strings.Cut(rest, " ")
		require.Contains(t, []string{"INSERT", "UPDATE", "DELETE"}, verb, name)
		require.True(t, strings.HasPrefix(rest, verb+mysqlHint), "%s: %s", name, q)
	}
	for name, q := range map[string]string{"claim": st.claim, "resolve": st.resolve} {
		require.True(t, strings.HasPrefix(q, mariadb+"CALL `t_"), "%s: %s", name, q)
		require.NotContains(t, q, "SET_VAR", "%s: MySQL takes no hint on a CALL", name)
	}
	for name, q := range map[string]string{"peek": st.peek, "get": st.get, "completedBy": st.completedBy} {
		require.True(t, strings.HasPrefix(q, "SELECT "), "%s: %s", name, q)
		require.NotContains(t, q, "innodb_lock_wait_timeout", name)
	}
	require.Contains(t, newStatements("t", seconds(time.Microsecond)).insertClaim, "innodb_lock_wait_timeout=1 ", "a sub-second LockTimeout is one second")
}
