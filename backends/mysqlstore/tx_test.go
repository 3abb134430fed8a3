package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
	"github.com/stagedoor/once/internal/txtest"
)

// TestClaimWaitsForUncommittedClaim: a Claim whose insert meets a
// concurrent uncommitted claim of the key waits for it and, once it
// commits, reports it (its first, lock-free read could not see it).
func TestClaimWaitsForUncommittedClaim(t *testing.T) {
	t.Run("insert-first", func(t *testing.T) { testClaimWaitsForUncommittedClaim(t, Config{}) })
	t.Run("read-first", func(t *testing.T) { testClaimWaitsForUncommittedClaim(t, Config{ReadFirstClaims: true}) })
	t.Run("procedure", func(t *testing.T) { testClaimWaitsForUncommittedClaim(t, Config{OneRoundTripClaims: true}) })
}

func testClaimWaitsForUncommittedClaim(t *testing.T, cfg Config) {
	db := newDB(t, nil)
	s := newStore(t, db, cfg)
	ctx := context.Background()
	scope := backendtest.Scope(t)
	for _, name := range []string{"insert", "takeover"} {
		t.Run(name, func(t *testing.T) {
			key := name
			if name == "takeover" {
				p := claimParams(scope, key)
				p.Lease = time.Millisecond
				r, err := s.Claim(ctx, p)
				require.NoError(t, err)
				require.True(t, r.Claimed)
				time.Sleep(10 * time.Millisecond)
			}
			tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
			require.NoError(t, err)
			defer func() { _ = tx.Rollback() }()
			r, err := s.InTx(tx).Claim(ctx, claimParams(scope, key))
			require.NoError(t, err)
			require.True(t, r.Claimed)

			got := make(chan backends.ClaimResult, 1)
			go func() {
				r, err := s.Claim(ctx, claimParams(scope, key))
				if err != nil {
					t.Error(err)
				}
				got <- r
			}()
			time.Sleep(200 * time.Millisecond) // the Claim blocks on the uncommitted row
			select {
			case r := <-got:
				t.Fatalf("claim did not wait for the uncommitted row: %+v", r)
			default:
			}
			require.NoError(t, tx.Commit())
			r = <-got
			require.False(t, r.Claimed)
			require.Equal(t, backends.StatePending, r.Existing.State)
			require.Greater(t, r.Existing.LeaseRemaining, 50*time.Second)
		})
	}
}

// TestInTxLockTimeout: past LockTimeout a Claim in a transaction reports
// the key in progress, leaves its transaction usable and restores the
// session's innodb_lock_wait_timeout; once the first commits, it sees its
// claim, at READ COMMITTED and at REPEATABLE READ alike.
func TestInTxLockTimeout(t *testing.T) {
	for _, iso := range []sql.IsolationLevel{sql.LevelReadCommitted, sql.LevelRepeatableRead} {
		t.Run(iso.String(), func(t *testing.T) {
			db := newDB(t, nil)
			s := newStore(t, db, Config{LockTimeout: time.Second})
			ctx := context.Background()
			scope := backendtest.Scope(t)

			first, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: iso})
			require.NoError(t, err)
			defer func() { _ = first.Rollback() }()
			r, err := s.InTx(first).Claim(ctx, claimParams(scope, "k"))
			require.NoError(t, err)
			require.True(t, r.Claimed)

			second, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: iso})
			require.NoError(t, err)
			defer func() { _ = second.Rollback() }()
			_, err = second.ExecContext(ctx, "SET SESSION innodb_lock_wait_timeout = 7")
			require.NoError(t, err)
			// Take the snapshot before the first commits.
			var n int
			require.NoError(t, second.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+quote(testTable)+" WHERE scope = ?", scope).Scan(&n))
			require.Zero(t, n)
			p := claimParams(scope, "k")
			r, err = s.InTx(second).Claim(ctx, p)
			require.NoError(t, err)
			require.False(t, r.Claimed)
			require.Equal(t, backends.StatePending, r.Existing.State)
			require.Equal(t, lockTimeoutHint, r.Existing.LeaseRemaining)
			require.Equal(t, p.Fingerprint, r.Existing.Fingerprint)
			copy(p.Fingerprint, "zz")
			require.Equal(t, []byte("fp"), r.Existing.Fingerprint, "the reported fingerprint is a copy, not the caller's buffer (backends, \"Bytes\")")

			var wait int
			require.NoError(t, second.QueryRowContext(ctx, "SELECT @@SESSION.innodb_lock_wait_timeout").Scan(&wait), "the transaction is still usable")
			require.Equal(t, 7, wait, "innodb_lock_wait_timeout is restored")

			require.NoError(t, first.Commit())
			r, err = s.InTx(second).Claim(ctx, claimParams(scope, "k"))
			require.NoError(t, err)
			require.False(t, r.Claimed, "the committed claim is seen, even from an older snapshot")
			require.Greater(t, r.Existing.LeaseRemaining, 50*time.Second)
			require.NoError(t, second.QueryRowContext(ctx, "SELECT @@SESSION.innodb_lock_wait_timeout").Scan(&wait))
			require.Equal(t, 7, wait)
		})
	}
}

// TestInTxConformance runs the suite on InTx stores, each operation in a
// transaction of its own, so the suite's cross-call expectations hold.
func TestInTxConformance(t *testing.T) {
	db := newDB(t, nil)
	s := newStore(t, db, Config{})
	backendtest.Run(t, func(testing.TB) backends.Store { return &autoTx{db: db, s: s} })
}

// TestInTxRepeatableReadConformance runs the suite on InTx stores at
// REPEATABLE READ, where a claim that finds a completed record reads it
// again with a locking read.
func TestInTxRepeatableReadConformance(t *testing.T) {
	db := newDB(t, nil)
	s := newStore(t, db, Config{})
	backendtest.Run(t, func(testing.TB) backends.Store {
		return &autoTx{db: db, s: s, isolation: sql.LevelRepeatableRead}
	})
}

// autoTx runs each operation of s.InTx in a transaction of its own, at
// READ COMMITTED unless isolation says otherwise.
type autoTx struct {
	db        *sql.DB
	s         *Store
	isolation sql.IsolationLevel
}

func inTx[R any](ctx context.Context, a *autoTx, fn func(backends.Store) (R, error)) (R, error) {
	var zero R
	isolation := a.isolation
	if isolation == sql.LevelDefault {
		isolation = sql.LevelReadCommitted
	}
	tx, err := a.db.BeginTx(ctx, &sql.TxOptions{Isolation: isolation})
	if err != nil {
		return zero, err
	}
	r, err := fn(a.s.InTx(tx))
	if err != nil {
		_ = tx.Rollback()
		return zero, err
	}
	return r, tx.Commit()
}

func (a *autoTx) Claim(ctx context.Context, p backends.ClaimParams) (backends.ClaimResult, error) {
	return inTx(ctx, a, func(s backends.Store) (backends.ClaimResult, error) { return s.Claim(ctx, p) })
}

func (a *autoTx) Complete(ctx context.Context, p backends.CompleteParams) (bool, error) {
	return inTx(ctx, a, func(s backends.Store) (bool, error) { return s.Complete(ctx, p) })
}

func (a *autoTx) Renew(ctx context.Context, p backends.RenewParams) (bool, error) {
	return inTx(ctx, a, func(s backends.Store) (bool, error) { return s.Renew(ctx, p) })
}

func (a *autoTx) Release(ctx context.Context, p backends.ReleaseParams) (bool, error) {
	return inTx(ctx, a, func(s backends.Store) (bool, error) { return s.Release(ctx, p) })
}

func (a *autoTx) Checkpoint(ctx context.Context, p backends.CheckpointParams) (bool, error) {
	return inTx(ctx, a, func(s backends.Store) (bool, error) { return s.Checkpoint(ctx, p) })
}

func (a *autoTx) Resolve(ctx context.Context, p backends.ResolveParams) (backends.ResolveResult, error) {
	return inTx(ctx, a, func(s backends.Store) (backends.ResolveResult, error) { return s.Resolve(ctx, p) })
}

func (a *autoTx) Hold(ctx context.Context, p backends.HoldParams) (bool, error) {
	return inTx(ctx, a, func(s backends.Store) (bool, error) { return s.Hold(ctx, p) })
}

func (a *autoTx) LeaseHeld(ctx context.Context, p backends.LeaseHeldParams) (backends.LeaseHeldResult, error) {
	return inTx(ctx, a, func(s backends.Store) (backends.LeaseHeldResult, error) { return s.LeaseHeld(ctx, p) })
}

// effects creates a table of side effects for one test, dropped after it.
func effects(t *testing.T, db *sql.DB) string {
	t.Helper()
	table := quote("effects_" + randomSuffix())
	_, err := db.Exec("CREATE TABLE " + table + " (k VARCHAR(64) NOT NULL, n INT NOT NULL) ENGINE=InnoDB")
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = db.Exec("DROP TABLE IF EXISTS " + table) })
	return table
}

func countRows(t *testing.T, db *sql.DB, query string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, db.QueryRow(query, args...).Scan(&n))
	return n
}

// TestDoTx runs the transactional mode's cases (internal/txtest) on
// BeginTx.
func TestDoTx(t *testing.T) {
	txtest.Run(t, txStoreUnderTest)
}

// TestHandlerTx runs oncehttp.HandlerTx's cases (internal/txtest) on
// BeginTx: a handler's row and its stored response commit together.
func TestHandlerTx(t *testing.T) {
	txtest.RunHTTP(t, txStoreUnderTest)
}

func txStoreUnderTest(t *testing.T) txtest.Store[Tx] {
	db := newDB(t, nil)
	s := newStore(t, db, Config{})
	table := effects(t, db)
	return txtest.Store[Tx]{
		Store: s,
		Begin: s.BeginTx,
		Effect: func(ctx context.Context, tx Tx, key string) error {
			_, err := tx.ExecContext(ctx, "INSERT INTO "+table+" (k, n) VALUES (?, 1)", key)
			return err
		},
		Count: func(t *testing.T, key string) int {
			return countRows(t, db, "SELECT COUNT(*) FROM "+table+" WHERE k = ?", key)
		},
		Kill: func(t *testing.T, tx Tx) {
			var id int64
			require.NoError(t, tx.QueryRowContext(context.Background(), "SELECT CONNECTION_ID()").Scan(&id))
			_, err := db.Exec("KILL ?", id)
			require.NoError(t, err)
		},
		Duplicates: 16,
	}
}

// TestRoundTripsPerDo counts the commands of whole once.Do calls on the
// pool store: inserting first (the default), 2 for every answer; reading
// first, a first execution 3 and a replay, an in-progress answer and a
// mismatch 1; with the claim procedure 2 and 1.
func TestRoundTripsPerDo(t *testing.T) {
	t.Run("insert-first", func(t *testing.T) { testRoundTripsPerDo(t, Config{}, 2, 2) })
	t.Run("read-first", func(t *testing.T) { testRoundTripsPerDo(t, Config{ReadFirstClaims: true}, 3, 1) })
	t.Run("procedure", func(t *testing.T) { testRoundTripsPerDo(t, Config{OneRoundTripClaims: true}, 2, 1) })
}

func testRoundTripsPerDo(t *testing.T, cfg Config, first, existing int64) {
	c := &counter{}
	db := newDB(t, func(cfg *mysql.Config) { cfg.DialFunc = c.dial })
	db.SetMaxOpenConns(1)
	s := newStore(t, db, cfg)
	name := backendtest.Scope(t)
	scope := once.New(s).Scope(name)
	ctx := context.Background()
	do := func(key, fp string) (string, error) {
		return once.Do(ctx, scope, key, once.Fingerprint(fp), func(context.Context) (string, error) { return "v", nil })
	}
	_, err := do("warm", "fp") // prepares the statements on the one connection
	require.NoError(t, err)
	_, err = do("warm", "fp") // and the read of an existing key
	require.NoError(t, err)
	require.EqualValues(t, first, c.count(func() { _, err = do("k", "fp") }), "first execution")
	require.NoError(t, err)
	require.EqualValues(t, existing, c.count(func() { _, err = do("k", "fp") }), "replay")
	require.NoError(t, err)
	require.EqualValues(t, existing, c.count(func() { _, err = do("k", "other") }), "mismatch")
	require.ErrorIs(t, err, once.ErrKeyReused)

	r, cerr := s.Claim(ctx, claimParams(name, "busy"))
	require.NoError(t, cerr)
	require.True(t, r.Claimed)
	require.EqualValues(t, existing, c.count(func() { _, err = do("busy", "fp") }), "in progress")
	require.ErrorIs(t, err, once.ErrInProgress)
}

// TestConcurrentTakeoverOneWinner races claims on a key whose lease lapsed:
// exactly one takes it over.
func TestConcurrentTakeoverOneWinner(t *testing.T) {
	t.Run("insert-first", func(t *testing.T) { testConcurrentTakeoverOneWinner(t, Config{}) })
	t.Run("read-first", func(t *testing.T) { testConcurrentTakeoverOneWinner(t, Config{ReadFirstClaims: true}) })
	t.Run("procedure", func(t *testing.T) { testConcurrentTakeoverOneWinner(t, Config{OneRoundTripClaims: true}) })
}

func testConcurrentTakeoverOneWinner(t *testing.T, cfg Config) {
	s := newStore(t, newDB(t, nil), cfg)
	ctx := context.Background()
	scope := backendtest.Scope(t)
	for round := range 5 {
		key := "k" + string(rune('a'+round))
		p := claimParams(scope, key)
		p.Lease = time.Millisecond
		r, err := s.Claim(ctx, p)
		require.NoError(t, err)
		require.True(t, r.Claimed)
		time.Sleep(5 * time.Millisecond)
		var winners atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 16 {
			wg.Go(func() {
				<-start
				r, err := s.Claim(ctx, claimParams(scope, key))
				if err != nil {
					t.Error(err)
					return
				}
				if r.Claimed {
					require.True(t, r.TookOver)
					winners.Add(1)
				}
			})
		}
		close(start)
		wg.Wait()
		require.EqualValues(t, 1, winners.Load(), "round %d", round)
	}
}

// TestDeadlockVictimRetried: when a transaction holding an uncommitted
// claim rolls back while two pool Claims wait on its row, InnoDB lets both
// waiters take a shared lock and then makes one of them a deadlock victim
// (the textbook three-inserter deadlock). The victim's autocommit CALL is
// run again, so both Claims answer, and exactly one claims the key.
func TestDeadlockVictimRetried(t *testing.T) {
	t.Run("insert-first", func(t *testing.T) { testDeadlockVictimRetried(t, Config{}) })
	t.Run("read-first", func(t *testing.T) { testDeadlockVictimRetried(t, Config{ReadFirstClaims: true}) })
	t.Run("procedure", func(t *testing.T) { testDeadlockVictimRetried(t, Config{OneRoundTripClaims: true}) })
}

func testDeadlockVictimRetried(t *testing.T, cfg Config) {
	db := newDB(t, nil)
	s := newStore(t, db, cfg)
	ctx := context.Background()
	scope := backendtest.Scope(t)
	for round := range 4 {
		key := "k" + string(rune('a'+round))
		tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
		require.NoError(t, err)
		r, err := s.InTx(tx).Claim(ctx, claimParams(scope, key))
		require.NoError(t, err)
		require.True(t, r.Claimed)

		var winners atomic.Int32
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				r, err := s.Claim(ctx, claimParams(scope, key))
				if err != nil {
					t.Errorf("round %d: %v", round, err)
					return
				}
				if r.Claimed {
					winners.Add(1)
				}
			})
		}
		time.Sleep(150 * time.Millisecond) // the Claims wait on the uncommitted row
		require.NoError(t, tx.Rollback())
		wg.Wait()
		require.EqualValues(t, 1, winners.Load(), "round %d", round)
	}
}

// TestDoTxDeadlockBeforeFnRetried: once.DoTx duplicates waiting for a
// claim that rolls back may deadlock; the victim's fn has not run and its
// claim's error matches backends.ErrTxRolledBack, so DoTx begins again,
// and fn runs exactly once in all.
func TestDoTxDeadlockBeforeFnRetried(t *testing.T) {
	db := newDB(t, nil)
	s := newStore(t, db, Config{})
	table := effects(t, db)
	scope := once.New(s).Scope(backendtest.Scope(t))
	ctx := context.Background()
	for round := range 3 {
		key := "k" + string(rune('a'+round))
		first, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
		require.NoError(t, err)
		r, err := s.InTx(first).Claim(ctx, claimParams(scope.Name(), key))
		require.NoError(t, err)
		require.True(t, r.Claimed)

		var ran atomic.Int32
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				_, err := once.DoTx(ctx, scope, key, nil, s.BeginTx, func(ctx context.Context, tx Tx) (string, error) {
					ran.Add(1)
					_, err := tx.ExecContext(ctx, "INSERT INTO "+table+" (k, n) VALUES (?, 1)", key)
					return "v", err
				})
				if err != nil && !errors.Is(err, once.ErrInProgress) {
					t.Errorf("round %d: %v", round, err)
				}
			})
		}
		time.Sleep(150 * time.Millisecond)
		require.NoError(t, first.Rollback())
		wg.Wait()
		require.EqualValues(t, 1, ran.Load(), "round %d", round)
		require.Equal(t, 1, countRows(t, db, "SELECT COUNT(*) FROM "+table+" WHERE k = ?", key))
	}
}

// A caller's REPEATABLE READ transaction whose snapshot predated a change
// of the key was answered from that snapshot: the CALL's first read is a
// consistent read, and a completed record there was answered without a
// locking read, so a record deleted (and completed again with another
// outcome) since tx's first read replayed the deleted outcome. A claim
// that finds a completed record in a caller's transaction now decides
// again from a locking read, the latest committed version.
func TestInTxRepeatableReadAnswersTheLatestRecord(t *testing.T) {
	db := newDB(t, nil)
	s := newStore(t, db, Config{})
	ctx := context.Background()
	complete := func(scope, fp, outcome string) {
		t.Helper()
		p := claimParams(scope, "k")
		p.Fingerprint = []byte(fp)
		r, err := s.Claim(ctx, p)
		require.NoError(t, err)
		require.True(t, r.Claimed)
		ok, err := s.Complete(ctx, backends.CompleteParams{Scope: scope, Key: "k", Owner: p.Owner, Outcome: []byte(outcome), Retention: time.Hour})
		require.NoError(t, err)
		require.True(t, ok)
	}
	deleteKey := func(scope string) {
		t.Helper()
		deleted, err := s.Delete(ctx, scope, "k")
		require.NoError(t, err)
		require.True(t, deleted)
	}
	for _, c := range []struct {
		name string
		// change changes the key after tx's snapshot; fp is the claim's.
		change func(scope string)
		fp     string
		check  func(t *testing.T, r backends.ClaimResult)
	}{{
		name:   "unchanged",
		change: func(string) {},
		fp:     "fp",
		check: func(t *testing.T, r backends.ClaimResult) {
			require.False(t, r.Claimed)
			require.Equal(t, "old", string(r.Existing.Outcome))
		},
	}, {
		name:   "completed again",
		change: func(scope string) { deleteKey(scope); complete(scope, "fp", "new") },
		fp:     "fp",
		check: func(t *testing.T, r backends.ClaimResult) {
			require.False(t, r.Claimed)
			require.Equal(t, backends.StateCompleted, r.Existing.State)
			require.Equal(t, "new", string(r.Existing.Outcome))
		},
	}, {
		name:   "completed again with another fingerprint",
		change: func(scope string) { deleteKey(scope); complete(scope, "other", "new") },
		fp:     "other",
		check: func(t *testing.T, r backends.ClaimResult) {
			require.False(t, r.Claimed)
			require.Equal(t, "other", string(r.Existing.Fingerprint), "a replay, not the deleted record's mismatch")
			require.Equal(t, "new", string(r.Existing.Outcome))
		},
	}, {
		name:   "deleted",
		change: deleteKey,
		fp:     "fp",
		check: func(t *testing.T, r backends.ClaimResult) {
			require.True(t, r.Claimed)
			require.False(t, r.TookOver)
		},
	}, {
		name: "claimed again",
		change: func(scope string) {
			deleteKey(scope)
			r, err := s.Claim(ctx, claimParams(scope, "k"))
			require.NoError(t, err)
			require.True(t, r.Claimed)
		},
		fp: "fp",
		check: func(t *testing.T, r backends.ClaimResult) {
			require.False(t, r.Claimed)
			require.Equal(t, backends.StatePending, r.Existing.State)
			require.Positive(t, r.Existing.LeaseRemaining)
		},
	}} {
		t.Run(c.name, func(t *testing.T) {
			scope := backendtest.Scope(t)
			complete(scope, "fp", "old")
			tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
			require.NoError(t, err)
			defer func() { _ = tx.Rollback() }()
			var n int // the caller's own first read in tx fixes its snapshot
			require.NoError(t, tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+quote(testTable)+" WHERE scope = ?", scope).Scan(&n))
			require.Equal(t, 1, n)
			c.change(scope)
			p := claimParams(scope, "k")
			p.Fingerprint = []byte(c.fp)
			r, err := s.InTx(tx).Claim(ctx, p)
			require.NoError(t, err)
			c.check(t, r)
			require.NoError(t, tx.Commit())
			if r.Claimed {
				rec, err := s.Get(ctx, scope, "k")
				require.NoError(t, err)
				require.NotZero(t, rec.State)
				require.Equal(t, backends.StatePending, rec.State, "the claim committed with tx")
			}
		})
	}
}

// The locking read of a completed record in a caller's transaction waits
// at most LockTimeout for a concurrent uncommitted write of the row (here
// a DELETE in another transaction), then reports the key in progress,
// leaving the transaction usable; once that write commits, the claim
// decides from the latest version.
func TestInTxLockingReadTimeout(t *testing.T) {
	db := newDB(t, nil)
	s := newStore(t, db, Config{LockTimeout: time.Second})
	ctx := context.Background()
	scope := backendtest.Scope(t)
	done := claimParams(scope, "k")
	r, err := s.Claim(ctx, done)
	require.NoError(t, err)
	require.True(t, r.Claimed)
	ok, err := s.Complete(ctx, backends.CompleteParams{Scope: scope, Key: "k", Owner: done.Owner, Outcome: []byte("v"), Retention: time.Hour})
	require.NoError(t, err)
	require.True(t, ok)

	deleter, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = deleter.Rollback() }()
	_, err = deleter.ExecContext(ctx, "DELETE FROM "+quote(testTable)+" WHERE scope = ? AND `key` = ?", scope, "k")
	require.NoError(t, err)

	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()
	r, err = s.InTx(tx).Claim(ctx, claimParams(scope, "k"))
	require.NoError(t, err)
	require.False(t, r.Claimed)
	require.Equal(t, backends.StatePending, r.Existing.State, "the stand-in of a record the store cannot see")
	require.Equal(t, lockTimeoutHint, r.Existing.LeaseRemaining)

	require.NoError(t, deleter.Commit())
	r, err = s.InTx(tx).Claim(ctx, claimParams(scope, "k"))
	require.NoError(t, err)
	require.True(t, r.Claimed, "the deleted record is absent, whatever tx's snapshot")
	require.NoError(t, tx.Commit())
}

var _ once.Tx = Tx{}

// TestDoTxHoldAfterTheTransactionRolledBackWhole: when the transaction was
// rolled back whole under fn (as InnoDB does on a deadlock), the savepoint
// went with it, so a Hold error cannot hold the key: DoTx reports
// HoldUnrecorded (ErrOutcomeUnrecorded), and the next call runs fn. A
// failed statement before the Hold leaves the transaction usable: the key
// is held.
func TestDoTxHoldAfterTheTransactionRolledBackWhole(t *testing.T) {
	db := newDB(t, nil)
	s := newStore(t, db, Config{})
	table := effects(t, db)
	scope := once.New(s, once.WithHoldFor(once.HoldUntilResolved)).Scope(backendtest.Scope(t))
	ctx := context.Background()
	errTimeout := errors.New("provider timed out after the request left")
	effect := func(ctx context.Context, tx Tx, key string) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO "+table+" (k, n) VALUES (?, 1)", key)
		return err
	}

	out, err := once.DoTxOutcome(ctx, scope, "failed-statement", nil, s.BeginTx, func(ctx context.Context, tx Tx) (int, error) {
		require.NoError(t, effect(ctx, tx, "failed-statement"))
		_, err := tx.ExecContext(ctx, "SELECT * FROM no_such_table_"+randomSuffix())
		require.Error(t, err)
		return 0, once.Hold(errTimeout)
	})
	require.Equal(t, once.Held, out.Status, "%v", err)
	require.Zero(t, countRows(t, db, "SELECT COUNT(*) FROM "+table))

	out, err = once.DoTxOutcome(ctx, scope, "k", nil, s.BeginTx, func(ctx context.Context, tx Tx) (int, error) {
		require.NoError(t, effect(ctx, tx, "k"))
		_, err := tx.ExecContext(ctx, "ROLLBACK") // the savepoint goes with it
		require.NoError(t, err)
		return 0, once.Hold(errTimeout)
	})
	require.Equal(t, once.HoldUnrecorded, out.Status)
	require.ErrorIs(t, err, once.ErrOutcomeUnrecorded)
	require.ErrorIs(t, err, errTimeout)
	v, err := once.DoTx(ctx, scope, "k", nil, s.BeginTx, func(ctx context.Context, tx Tx) (string, error) {
		return "ran again", effect(ctx, tx, "k")
	})
	require.NoError(t, err)
	require.Equal(t, "ran again", v)
	require.Equal(t, 1, countRows(t, db, "SELECT COUNT(*) FROM "+table+" WHERE k = ?", "k"))
}
