package consume_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/postgres"
	"github.com/stagedoor/once/consume"
	"github.com/stagedoor/once/internal/testservers"
)

// txEnv is a PostgreSQL store and an effects table of its own.
type txEnv struct {
	store  *postgres.Store
	begin  func(context.Context) (pgx.Tx, backends.Store, error)
	count  func(key string) int
	effect func(ctx context.Context, tx pgx.Tx, key string) error
}

func newTxEnv(t *testing.T) *txEnv {
	store, pool := testservers.PostgresStore(t)
	table := pgx.Identifier{"once_fx_" + testservers.Suffix()}.Sanitize()
	_, err := pool.Exec(context.Background(), "CREATE TABLE "+table+" (key text NOT NULL)")
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = pool.Exec(context.Background(), "DROP TABLE "+table) })
	return &txEnv{
		store: store,
		begin: store.BeginTx,
		count: func(key string) int {
			var n int
			require.NoError(t, pool.QueryRow(context.Background(), "SELECT count(*) FROM "+table+" WHERE key = $1", key).Scan(&n))
			return n
		},
		effect: func(ctx context.Context, tx pgx.Tx, key string) error {
			_, err := tx.Exec(ctx, "INSERT INTO "+table+" (key) VALUES ($1)", key)
			return err
		},
	}
}

// failingCommit is a transaction whose commit fails after rolling back.
type failingCommit struct{ pgx.Tx }

func (f failingCommit) Commit(ctx context.Context) error {
	_ = f.Tx.Rollback(ctx)
	return errors.New("connection reset")
}

func TestDoTx(t *testing.T) {
	ctx := context.Background()
	scope := once.New(nil).Scope("group")
	fp := once.Fingerprint("payload")

	t.Run("CommitsTheEffectWithTheOutcomeOnce", func(t *testing.T) {
		e := newTxEnv(t)
		for i, want := range []consume.Reason{consume.ReasonDone, consume.ReasonReplayed, consume.ReasonReplayed} {
			d := consume.DoTx(ctx, scope, "m1", fp, e.begin, func(ctx context.Context, tx pgx.Tx) error { return e.effect(ctx, tx, "m1") })
			require.Equal(t, want, d.Reason, "delivery %d: %v", i, d.Err)
			require.Equal(t, consume.Ack, d.Action)
		}
		require.Equal(t, 1, e.count("m1"))
	})
	t.Run("RollsBackOnRetryableErrorAndRejection", func(t *testing.T) {
		e := newTxEnv(t)
		for _, fail := range []error{errors.New("provider 503"), consume.Reject(errors.New("bad payload"))} {
			d := consume.DoTx(ctx, scope, "m1", fp, e.begin, func(ctx context.Context, tx pgx.Tx) error {
				require.NoError(t, e.effect(ctx, tx, "m1"))
				return fail
			})
			require.NotEqual(t, consume.Ack, d.Action)
			require.Zero(t, e.count("m1"), "the effect rolled back with the claim")
		}
		d := consume.DoTx(ctx, scope, "m1", fp, e.begin, func(ctx context.Context, tx pgx.Tx) error { return e.effect(ctx, tx, "m1") })
		require.Equal(t, consume.ReasonDone, d.Reason)
		require.Equal(t, 1, e.count("m1"))
	})
	t.Run("PanicRollsBack", func(t *testing.T) {
		e := newTxEnv(t)
		d := consume.DoTx(ctx, scope, "m1", fp, e.begin, func(ctx context.Context, tx pgx.Tx) error {
			require.NoError(t, e.effect(ctx, tx, "m1"))
			panic("bug")
		})
		require.Equal(t, consume.ReasonHandlerError, d.Reason)
		require.Zero(t, e.count("m1"))
	})
	t.Run("FinalErrorCommitsAndReplays", func(t *testing.T) {
		e := newTxEnv(t)
		d := consume.DoTx(ctx, scope, "m1", fp, e.begin, func(context.Context, pgx.Tx) error { return once.Final(errors.New("declined")) })
		require.Equal(t, consume.ReasonDone, d.Reason)
		d = consume.DoTx(ctx, scope, "m1", fp, e.begin, func(context.Context, pgx.Tx) error { return nil })
		require.Equal(t, consume.ReasonReplayed, d.Reason)
		require.EqualError(t, d.Err, "declined")
	})
	t.Run("FailedCommitIsRetriedAndRunsAgain", func(t *testing.T) {
		e := newTxEnv(t)
		broken := func(ctx context.Context) (failingCommit, backends.Store, error) {
			tx, store, err := e.begin(ctx)
			return failingCommit{tx}, store, err
		}
		d := consume.DoTx(ctx, scope, "m1", fp, broken, func(ctx context.Context, tx failingCommit) error { return e.effect(ctx, tx, "m1") })
		require.Equal(t, consume.RetryLater, d.Action)
		require.Equal(t, consume.ReasonStoreDown, d.Reason)
		require.ErrorAs(t, d.Err, new(*once.StoreError))
		require.Zero(t, e.count("m1"))
		d = consume.DoTx(ctx, scope, "m1", fp, e.begin, func(ctx context.Context, tx pgx.Tx) error { return e.effect(ctx, tx, "m1") })
		require.Equal(t, consume.ReasonDone, d.Reason)
		require.Equal(t, 1, e.count("m1"))
	})
	t.Run("UnrecordedRollsBack", func(t *testing.T) {
		e := newTxEnv(t)
		unrecorded := func(ctx context.Context) (pgx.Tx, backends.Store, error) {
			tx, store, err := e.begin(ctx)
			return tx, txFaultStore{&faults{Store: store, completeErr: errStoreDown}, store.(backends.Savepointer)}, err
		}
		d := consume.DoTx(ctx, scope, "m1", fp, unrecorded, func(ctx context.Context, tx pgx.Tx) error { return e.effect(ctx, tx, "m1") })
		require.Equal(t, consume.RetryLater, d.Action)
		require.Equal(t, consume.ReasonStoreDown, d.Reason, "the effect rolled back: not acknowledged")
		require.ErrorIs(t, d.Err, once.ErrOutcomeUnrecorded)
		require.Zero(t, e.count("m1"))
	})
	t.Run("HoldThatCannotBeKeptRollsBack", func(t *testing.T) {
		// Unlike outside a transaction, the key is not left claimed until
		// its lease ends: everything rolled back, the redelivery runs the
		// handler at once.
		e := newTxEnv(t)
		unheld := func(ctx context.Context) (pgx.Tx, backends.Store, error) {
			tx, store, err := e.begin(ctx)
			return tx, txFaultStore{&faults{Store: store, holdErr: errStoreDown}, store.(backends.Savepointer)}, err
		}
		timeout := errors.New("provider timed out")
		d := consume.DoTx(ctx, scope, "m1", fp, unheld, func(ctx context.Context, tx pgx.Tx) error {
			require.NoError(t, e.effect(ctx, tx, "m1"))
			return once.Hold(timeout)
		})
		requireDecision(t, d, consume.RetryLater, consume.ReasonStoreDown)
		require.ErrorIs(t, d.Err, once.ErrOutcomeUnrecorded)
		require.ErrorIs(t, d.Err, timeout)
		require.Zero(t, e.count("m1"))
		d = consume.DoTx(ctx, scope, "m1", fp, e.begin, func(ctx context.Context, tx pgx.Tx) error { return e.effect(ctx, tx, "m1") })
		requireDecision(t, d, consume.Ack, consume.ReasonDone)
		require.Equal(t, 1, e.count("m1"))
	})
	t.Run("BeginFailsClosed", func(t *testing.T) {
		ran := false
		d := consume.DoTx(ctx, scope, "m1", fp,
			func(context.Context) (pgx.Tx, backends.Store, error) { return nil, nil, errStoreDown },
			func(context.Context, pgx.Tx) error { ran = true; return nil })
		require.Equal(t, consume.ReasonStoreDown, d.Reason)
		require.ErrorIs(t, d.Err, errStoreDown)
		require.False(t, ran)
	})
	t.Run("BadInput", func(t *testing.T) {
		e := newTxEnv(t)
		noop := func(context.Context, pgx.Tx) error { return nil }
		require.Equal(t, consume.ReasonInvalidKey, consume.DoTx(ctx, scope, "", fp, e.begin, noop).Reason)
		require.Equal(t, consume.ReasonMisconfigured, consume.DoTx(ctx, scope, "m1", fp, nil, noop).Reason)
		require.Equal(t, consume.ReasonMisconfigured, consume.DoTx[pgx.Tx](ctx, scope, "m1", fp, e.begin, nil).Reason)
		//lint:ignore SA1012 a nil context is the input under test
		require.Equal(t, consume.ReasonMisconfigured, consume.DoTx(nil, scope, "m1", fp, e.begin, noop).Reason)
	})
	t.Run("ValueReplayed", func(t *testing.T) {
		e := newTxEnv(t)
		for _, want := range []consume.Reason{consume.ReasonDone, consume.ReasonReplayed} {
			v, d := consume.ValueTx(ctx, scope, "m1", fp, e.begin, func(ctx context.Context, tx pgx.Tx) (string, error) {
				return "billed", e.effect(ctx, tx, "m1")
			})
			require.Equal(t, want, d.Reason)
			require.Equal(t, "billed", v)
		}
		require.Equal(t, 1, e.count("m1"))
	})
	t.Run("ConcurrentDuplicatesOneEffect", func(t *testing.T) {
		e := newTxEnv(t)
		var wg sync.WaitGroup
		decisions := make(chan consume.Decision, 16)
		for range 16 {
			wg.Go(func() {
				decisions <- consume.DoTx(ctx, scope, "m1", fp, e.begin, func(ctx context.Context, tx pgx.Tx) error { return e.effect(ctx, tx, "m1") })
			})
		}
		wg.Wait()
		close(decisions)
		done := 0
		for d := range decisions {
			if d.Reason == consume.ReasonDone {
				done++
				continue
			}
			require.Contains(t, []consume.Reason{consume.ReasonReplayed, consume.ReasonInProgress}, d.Reason, "%v", d.Err)
		}
		require.Equal(t, 1, done)
		require.Equal(t, 1, e.count("m1"))
	})
}

// txFaultStore keeps the savepoints of a transaction's store through a
// fault wrapper.
type txFaultStore struct {
	backends.Store
	backends.Savepointer
}
