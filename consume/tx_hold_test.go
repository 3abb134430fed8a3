package consume_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/consume"
)

// requireHeld checks, outside any transaction, that key is held in the
// committed table.
func requireHeld(t *testing.T, e *txEnv, scope once.Scope, key string) {
	t.Helper()
	ran := false
	_, err := once.Do(context.Background(), once.New(e.store).Scope(scope.Name()), key, nil, func(context.Context) (int, error) { ran = true; return 0, nil })
	var inProgress *once.InProgressError
	require.ErrorAs(t, err, &inProgress, "the key is not held")
	require.True(t, inProgress.Held)
	require.False(t, ran)
}

// TestDoTxHoldKeepsTheKeyHeld: a handler's Hold error leaves its key
// held after DoTx, as Do's ReasonHeld says, with the handler's
// writes undone (rolled back to the savepoint taken after the claim) and
// the held claim committed. DoTx rolled back every decision but Ack,
// the hold with it: it answered ReasonHeld for a key that was not held,
// and the redelivery ran the handler, whose outcome was unknown, again.
func TestDoTxHoldKeepsTheKeyHeld(t *testing.T) {
	ctx := context.Background()
	scope := once.New(nil, once.WithHoldFor(once.HoldUntilResolved)).Scope("group")
	errTimeout := errors.New("payment provider timed out after the request left")

	t.Run("HeldUntilResolvedThenReplayed", func(t *testing.T) {
		e := newTxEnv(t)
		runs := 0
		handler := func(ctx context.Context, tx pgx.Tx) error {
			runs++
			require.NoError(t, e.effect(ctx, tx, "m1"))
			return once.Hold(errTimeout)
		}
		d := consume.DoTx(ctx, scope, "m1", nil, e.begin, handler)
		requireDecision(t, d, consume.RetryLater, consume.ReasonHeld)
		require.ErrorIs(t, d.Err, errTimeout)
		require.Equal(t, consume.HeldRedelivery, d.RetryAfter)
		require.Zero(t, e.count("m1"), "the handler's writes rolled back")
		requireHeld(t, e, scope, "m1")

		d = consume.DoTx(ctx, scope, "m1", nil, e.begin, handler)
		requireDecision(t, d, consume.RetryLater, consume.ReasonInProgress)
		var inProgress *once.InProgressError
		require.ErrorAs(t, d.Err, &inProgress)
		require.True(t, inProgress.Held)
		require.Equal(t, 1, runs, "the handler whose outcome is unknown did not run again")

		require.NoError(t, once.Resolve(ctx, once.New(e.store).Scope(scope.Name()), "m1", nil, struct{}{}, nil))
		d = consume.DoTx(ctx, scope, "m1", nil, e.begin, handler)
		requireDecision(t, d, consume.Ack, consume.ReasonReplayed)
		require.Equal(t, 1, runs)
	})
	t.Run("AfterAFailedStatement", func(t *testing.T) {
		// The handler's failed statement aborted the transaction; the
		// rollback to the savepoint makes it usable for the hold.
		e := newTxEnv(t)
		d := consume.DoTx(ctx, scope, "m1", nil, e.begin, func(ctx context.Context, tx pgx.Tx) error {
			require.NoError(t, e.effect(ctx, tx, "m1"))
			_, err := tx.Exec(ctx, "SELECT 1/0")
			require.Error(t, err)
			return once.Hold(errTimeout)
		})
		requireDecision(t, d, consume.RetryLater, consume.ReasonHeld)
		require.Zero(t, e.count("m1"))
		requireHeld(t, e, scope, "m1")
	})
	t.Run("PastTheConsumersDeadline", func(t *testing.T) {
		// The typical Hold: the call outlived the consumer's deadline.
		// The hold commits on a context detached from it.
		e := newTxEnv(t)
		dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		d := consume.DoTx(dctx, scope, "m1", nil, e.begin, func(ctx context.Context, tx pgx.Tx) error {
			<-ctx.Done()
			return once.Hold(ctx.Err())
		})
		requireDecision(t, d, consume.RetryLater, consume.ReasonHeld)
		requireHeld(t, e, scope, "m1")
	})
	t.Run("DefaultHoldIsOneLease", func(t *testing.T) {
		e := newTxEnv(t)
		scope := once.New(nil, once.WithLease(40*time.Second)).Scope("group")
		d := consume.DoTx(ctx, scope, "m1", nil, e.begin, func(context.Context, pgx.Tx) error { return once.Hold(errTimeout) })
		requireDecision(t, d, consume.RetryLater, consume.ReasonHeld)
		require.Equal(t, 40*time.Second, d.RetryAfter)
		requireHeld(t, e, scope, "m1")
	})
}

// TestDoTxAgainstAModel drives DoTx on PostgreSQL with random
// deliveries (keys, payloads, handler behaviours), each handler writing
// one effect row in the transaction, and checks every decision and handler
// run against Do's model, and the effect rows against the model's
// state: one row for a key done or final, none otherwise (a held key's
// writes are rolled back, the key committed held).
func TestDoTxAgainstAModel(t *testing.T) {
	e := newTxEnv(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	scope := once.New(nil, once.WithLease(time.Hour)).Scope("group")
	model := map[string]*consumeModel{}
	behaviours := []string{"ok", "final", "retry", "hold", "panic", "reject"}
	for step := range 150 {
		key := "k" + strconv.Itoa(step/30) + "-" + strconv.Itoa(rng.IntN(4)) // four keys at a time, new ones every 30 steps
		payload := "p" + strconv.Itoa(rng.IntN(2))
		behaviour := behaviours[rng.IntN(len(behaviours))]
		ran := false
		d := consume.DoTx(context.Background(), scope, key, once.Fingerprint(payload), e.begin, func(ctx context.Context, tx pgx.Tx) error {
			ran = true
			if err := e.effect(ctx, tx, key); err != nil {
				return err
			}
			switch behaviour {
			case "final":
				return once.Final(errors.New("declined"))
			case "retry":
				return errors.New("503")
			case "hold":
				return once.Hold(errors.New("timeout"))
			case "panic":
				panic("bug")
			case "reject":
				return consume.Reject(errors.New("bad payload"))
			}
			return nil
		})
		wantReason, wantRun := predict(model, key, payload, behaviour)
		require.Equal(t, wantReason, d.Reason, "step %d: key %q payload %s behaviour %s: %v", step, key, payload, behaviour, d.Err)
		require.Equal(t, wantRun, ran, "step %d: handler run", step)
		want := 0
		if s := model[key].state; s == "done" || s == "final" {
			want = 1
		}
		require.Equal(t, want, e.count(key), "step %d: effect rows of %q (state %q)", step, key, model[key].state)
	}
}
