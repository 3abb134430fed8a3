package consume_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/consume"
	"github.com/stagedoor/once/internal/testservers"
)

// TestDecisionTable checks every row of Do's decision table on
// every store, over the real servers.
func TestDecisionTable(t *testing.T) {
	for name, newStore := range testservers.Stores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			consumeTable(t, newStore)
		})
	}
}

// counted returns a handler that counts its runs and returns err.
func counted(runs *atomic.Int32, err error) func(context.Context) error {
	return func(context.Context) error { runs.Add(1); return err }
}

func requireDecision(t *testing.T, d consume.Decision, action consume.Action, reason consume.Reason) {
	t.Helper()
	require.Equal(t, action, d.Action, "decision %v, err %v", d, d.Err)
	require.Equal(t, reason, d.Reason, "decision %v, err %v", d, d.Err)
	if action != consume.RetryLater {
		require.Zero(t, d.RetryAfter)
	}
}

func consumeTable(t *testing.T, newStore func(testing.TB) backends.Store) {
	ctx := context.Background()
	fp := once.Fingerprint("payload-1")

	t.Run("DoneThenReplayed", func(t *testing.T) {
		scope := once.New(newStore(t)).Scope("group")
		var runs atomic.Int32
		d := consume.Do(ctx, scope, "m1", fp, counted(&runs, nil))
		requireDecision(t, d, consume.Ack, consume.ReasonDone)
		require.NoError(t, d.Err)
		d = consume.Do(ctx, scope, "m1", fp, counted(&runs, nil))
		requireDecision(t, d, consume.Ack, consume.ReasonReplayed)
		require.NoError(t, d.Err)
		require.Equal(t, int32(1), runs.Load())
	})
	t.Run("FinalThenReplayed", func(t *testing.T) {
		scope := once.New(newStore(t), once.RegisterError[*CardDeclinedError]("card_declined")).Scope("group")
		var runs atomic.Int32
		declined := &CardDeclinedError{Reason: "lost_card"}
		d := consume.Do(ctx, scope, "m1", fp, counted(&runs, once.Final(declined)))
		requireDecision(t, d, consume.Ack, consume.ReasonDone)
		var first *CardDeclinedError // the first answer is the replay's: the stored error, decoded
		require.ErrorAs(t, d.Err, &first)
		require.Equal(t, declined.Reason, first.Reason)
		d = consume.Do(ctx, scope, "m1", fp, counted(&runs, nil))
		requireDecision(t, d, consume.Ack, consume.ReasonReplayed)
		var replayed *CardDeclinedError
		require.ErrorAs(t, d.Err, &replayed)
		require.Equal(t, "lost_card", replayed.Reason)
		require.Equal(t, int32(1), runs.Load(), "a replayed final error is acked, never run again")
	})
	t.Run("FinalByClassifier", func(t *testing.T) {
		errBad := errors.New("bad account")
		scope := once.New(newStore(t), once.WithClassifier(func(err error) once.Class {
			if errors.Is(err, errBad) {
				return once.ClassFinal
			}
			return once.ClassRetry
		})).Scope("group")
		var runs atomic.Int32
		requireDecision(t, consume.Do(ctx, scope, "m1", fp, counted(&runs, errBad)), consume.Ack, consume.ReasonDone)
		requireDecision(t, consume.Do(ctx, scope, "m1", fp, counted(&runs, errBad)), consume.Ack, consume.ReasonReplayed)
		require.Equal(t, int32(1), runs.Load())
	})
	t.Run("Unrecorded", func(t *testing.T) {
		store := &faults{Store: newStore(t), completeErr: errStoreDown}
		var runs atomic.Int32
		d := consume.Do(ctx, once.New(store).Scope("group"), "m1", fp, counted(&runs, nil))
		requireDecision(t, d, consume.Ack, consume.ReasonUnrecorded)
		require.ErrorIs(t, d.Err, once.ErrOutcomeUnrecorded)
		require.Equal(t, int32(1), runs.Load(), "the effect happened: acked so that it is not repeated")
	})
	t.Run("InProgress", func(t *testing.T) {
		scope := once.New(newStore(t)).Scope("group")
		started, release := make(chan struct{}), make(chan struct{})
		first := make(chan consume.Decision, 1)
		go func() {
			first <- consume.Do(ctx, scope, "m1", fp, func(context.Context) error {
				close(started)
				<-release
				return nil
			})
		}()
		<-started
		var runs atomic.Int32
		d := consume.Do(ctx, scope, "m1", fp, counted(&runs, nil))
		requireDecision(t, d, consume.RetryLater, consume.ReasonInProgress)
		require.ErrorIs(t, d.Err, once.ErrInProgress)
		require.Positive(t, d.RetryAfter)
		require.LessOrEqual(t, d.RetryAfter, time.Second)
		close(release)
		requireDecision(t, <-first, consume.Ack, consume.ReasonDone)
		requireDecision(t, consume.Do(ctx, scope, "m1", fp, counted(&runs, nil)), consume.Ack, consume.ReasonReplayed)
		require.Zero(t, runs.Load())
	})
	t.Run("HeldThenInProgress", func(t *testing.T) {
		scope := once.New(newStore(t), once.WithLease(time.Minute)).Scope("group")
		var runs atomic.Int32
		errTimeout := errors.New("provider timed out")
		d := consume.Do(ctx, scope, "m1", fp, counted(&runs, once.Hold(errTimeout)))
		requireDecision(t, d, consume.RetryLater, consume.ReasonHeld)
		require.ErrorIs(t, d.Err, errTimeout)
		require.Equal(t, time.Minute, d.RetryAfter)
		d = consume.Do(ctx, scope, "m1", fp, counted(&runs, nil))
		requireDecision(t, d, consume.RetryLater, consume.ReasonInProgress)
		require.Equal(t, int32(1), runs.Load(), "a held key is not run again before its lease ends")
	})
	t.Run("HandlerErrorThenRerun", func(t *testing.T) {
		scope := once.New(newStore(t)).Scope("group")
		var runs atomic.Int32
		errFlaky := errors.New("downstream 503")
		d := consume.Do(ctx, scope, "m1", fp, counted(&runs, errFlaky))
		requireDecision(t, d, consume.RetryLater, consume.ReasonHandlerError)
		require.ErrorIs(t, d.Err, errFlaky)
		require.Zero(t, d.RetryAfter)
		requireDecision(t, consume.Do(ctx, scope, "m1", fp, counted(&runs, nil)), consume.Ack, consume.ReasonDone)
		require.Equal(t, int32(2), runs.Load(), "a retryable error releases the claim at once")
	})
	t.Run("PanicThenRerun", func(t *testing.T) {
		scope := once.New(newStore(t)).Scope("group")
		var runs atomic.Int32
		d := consume.Do(ctx, scope, "m1", fp, func(context.Context) error { runs.Add(1); panic("boom") })
		requireDecision(t, d, consume.RetryLater, consume.ReasonHandlerError)
		var p *once.PanicError
		require.ErrorAs(t, d.Err, &p)
		require.Equal(t, "boom", p.Value)
		require.Contains(t, string(p.Stack), "consume_test.go")
		requireDecision(t, consume.Do(ctx, scope, "m1", fp, counted(&runs, nil)), consume.Ack, consume.ReasonDone)
		require.Equal(t, int32(2), runs.Load(), "a panic releases the claim")
	})
	t.Run("LeaseLost", func(t *testing.T) {
		inner := newStore(t)
		store := &faults{Store: inner, renewErr: errors.New("paused")}
		scope := once.New(store, once.WithLease(200*time.Millisecond)).Scope("group")
		started, resume := make(chan struct{}), make(chan struct{})
		stale := make(chan consume.Decision, 1)
		go func() {
			stale <- consume.Do(ctx, scope, "m1", fp, func(context.Context) error {
				close(started)
				<-resume
				return nil
			})
		}()
		<-started
		other := once.New(inner).Scope("group")
		var runs atomic.Int32
		require.Eventually(t, func() bool {
			return consume.Do(ctx, other, "m1", fp, counted(&runs, nil)).Reason == consume.ReasonDone
		}, 10*time.Second, 20*time.Millisecond, "the other consumer takes the key over after the lease")
		close(resume)
		d := <-stale
		requireDecision(t, d, consume.RetryLater, consume.ReasonLeaseLost)
		require.ErrorIs(t, d.Err, once.ErrLeaseLost)
		requireDecision(t, consume.Do(ctx, other, "m1", fp, counted(&runs, nil)), consume.Ack, consume.ReasonReplayed)
	})
	t.Run("StoreDown", func(t *testing.T) {
		store := &faults{Store: newStore(t), claimErr: errStoreDown}
		var runs atomic.Int32
		d := consume.Do(ctx, once.New(store).Scope("group"), "m1", fp, counted(&runs, nil))
		requireDecision(t, d, consume.RetryLater, consume.ReasonStoreDown)
		require.ErrorAs(t, d.Err, new(*once.StoreError))
		require.Equal(t, consume.StoreRetryAfter, d.RetryAfter)
		require.Zero(t, runs.Load(), "fail closed")
	})
	t.Run("Canceled", func(t *testing.T) {
		scope := once.New(newStore(t)).Scope("group")
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		var runs atomic.Int32
		d := consume.Do(cctx, scope, "m1", fp, counted(&runs, nil))
		requireDecision(t, d, consume.RetryLater, consume.ReasonCanceled)
		require.Zero(t, runs.Load())
		requireDecision(t, consume.Do(ctx, scope, "m1", fp, counted(&runs, nil)), consume.Ack, consume.ReasonDone)
	})
	t.Run("CanceledWhileRunning", func(t *testing.T) {
		// A handler that gives up because the consumer is shutting down is
		// answered canceled, not a handler error an adapter would count.
		scope := once.New(newStore(t)).Scope("group")
		cause := errors.New("SIGTERM")
		cases := map[string]func(context.Context, context.CancelFunc) error{
			"ctx.Err": func(ctx context.Context, cancel context.CancelFunc) error {
				cancel()
				return ctx.Err()
			},
			"wrapped": func(ctx context.Context, cancel context.CancelFunc) error {
				cancel()
				return fmt.Errorf("charge: %w", ctx.Err())
			},
		}
		for name, h := range cases {
			cctx, cancel := context.WithCancel(ctx)
			d := consume.Do(cctx, scope, "m-"+name, fp, func(hctx context.Context) error { return h(hctx, cancel) })
			requireDecision(t, d, consume.RetryLater, consume.ReasonCanceled)
			require.ErrorIs(t, d.Err, context.Canceled, name)
		}
		cctx, cancel := context.WithCancelCause(ctx)
		d := consume.Do(cctx, scope, "m-cause", fp, func(hctx context.Context) error {
			cancel(cause)
			return context.Cause(hctx)
		})
		requireDecision(t, d, consume.RetryLater, consume.ReasonCanceled)
		// The claim was released: the redelivery runs the handler.
		var runs atomic.Int32
		requireDecision(t, consume.Do(ctx, scope, "m-ctx.Err", fp, counted(&runs, nil)), consume.Ack, consume.ReasonDone)
		require.Equal(t, int32(1), runs.Load())
		// A context error of the handler's own making, with the consumer's
		// context alive, is a handler error.
		d = consume.Do(ctx, scope, "m-own", fp, func(hctx context.Context) error {
			tctx, tcancel := context.WithCancel(hctx)
			tcancel()
			return tctx.Err()
		})
		requireDecision(t, d, consume.RetryLater, consume.ReasonHandlerError)
	})
	t.Run("Misconfigured", func(t *testing.T) {
		scope := once.New(newStore(t)).Scope("group")
		var runs atomic.Int32
		cases := map[string]consume.Decision{
			"zero scope":  consume.Do(ctx, once.Scope{}, "m1", fp, counted(&runs, nil)),
			"bad scope":   consume.Do(ctx, once.New(newStore(t)).Scope(""), "m1", fp, counted(&runs, nil)),
			"nil handler": consume.Do(ctx, scope, "m1", fp, nil),
			//lint:ignore SA1012 a nil context is the input under test
			"nil context":  consume.Do(nil, scope, "m1", fp, counted(&runs, nil)),
			"long digest":  consume.Do(ctx, scope, "m1", make(once.Fingerprint, 65), counted(&runs, nil)),
			"nil keeper":   consume.Do(ctx, (*once.Keeper)(nil).Scope("group"), "m1", fp, counted(&runs, nil)),
			"scope w/ ctl": consume.Do(ctx, once.New(newStore(t)).Scope("a\nb"), "m1", fp, counted(&runs, nil)),
		}
		for name, d := range cases {
			requireDecision(t, d, consume.RetryLater, consume.ReasonMisconfigured)
			require.ErrorAs(t, d.Err, new(*once.InvalidInputError), name)
		}
		require.Zero(t, runs.Load())
	})
	t.Run("KeyReused", func(t *testing.T) {
		scope := once.New(newStore(t)).Scope("group")
		var runs atomic.Int32
		requireDecision(t, consume.Do(ctx, scope, "m1", fp, counted(&runs, nil)), consume.Ack, consume.ReasonDone)
		d := consume.Do(ctx, scope, "m1", once.Fingerprint("payload-2"), counted(&runs, nil))
		requireDecision(t, d, consume.DeadLetter, consume.ReasonKeyReused)
		require.ErrorIs(t, d.Err, once.ErrKeyReused)
		require.Equal(t, int32(1), runs.Load())
	})
	t.Run("InvalidKey", func(t *testing.T) {
		scope := once.New(newStore(t)).Scope("group")
		var runs atomic.Int32
		for _, key := range []string{"", strings.Repeat("k", 256), "a\x00b", "\xff\xfe", "tab\tkey"} {
			d := consume.Do(ctx, scope, key, fp, counted(&runs, nil))
			requireDecision(t, d, consume.DeadLetter, consume.ReasonInvalidKey)
			var invalid *once.InvalidInputError
			require.ErrorAs(t, d.Err, &invalid)
			require.Equal(t, "key", invalid.Field)
		}
		require.Zero(t, runs.Load())
		requireDecision(t, consume.Do(ctx, scope, strings.Repeat("k", 255), fp, counted(&runs, nil)), consume.Ack, consume.ReasonDone)
	})
	t.Run("Undecodable", func(t *testing.T) {
		scope := once.New(newStore(t)).Scope("group")
		_, err := once.Do(ctx, scope, "m1", fp, func(context.Context) (string, error) { return "text", nil })
		require.NoError(t, err)
		var runs atomic.Int32
		_, d := consume.Value(ctx, scope, "m1", fp, func(context.Context) (int, error) { runs.Add(1); return 1, nil })
		requireDecision(t, d, consume.DeadLetter, consume.ReasonUndecodable)
		require.ErrorIs(t, d.Err, once.ErrUndecodable)
		require.Zero(t, runs.Load())
	})
	t.Run("RejectedThenFixedCopy", func(t *testing.T) {
		scope := once.New(newStore(t)).Scope("group")
		var runs atomic.Int32
		errSyntax := errors.New("payload is not JSON")
		d := consume.Do(ctx, scope, "m1", nil, counted(&runs, consume.Reject(errSyntax)))
		requireDecision(t, d, consume.DeadLetter, consume.ReasonRejected)
		require.ErrorIs(t, d.Err, errSyntax)
		require.ErrorIs(t, d.Err, consume.ErrRejected)
		d = consume.Do(ctx, scope, "m1", nil, counted(&runs, once.Final(consume.Reject(errSyntax))))
		requireDecision(t, d, consume.DeadLetter, consume.ReasonRejected)
		requireDecision(t, consume.Do(ctx, scope, "m1", nil, counted(&runs, nil)), consume.Ack, consume.ReasonDone)
		require.Equal(t, int32(3), runs.Load(), "a rejection stores nothing")
	})
	t.Run("ValueReplayed", func(t *testing.T) {
		scope := once.New(newStore(t)).Scope("group")
		v, d := consume.Value(ctx, scope, "m1", fp, func(context.Context) ([]string, error) { return []string{"out-1"}, nil })
		requireDecision(t, d, consume.Ack, consume.ReasonDone)
		require.Equal(t, []string{"out-1"}, v)
		v, d = consume.Value(ctx, scope, "m1", fp, func(context.Context) ([]string, error) { return []string{"other"}, nil })
		requireDecision(t, d, consume.Ack, consume.ReasonReplayed)
		require.Equal(t, []string{"out-1"}, v)
	})
}

func TestDecisionStrings(t *testing.T) {
	d := consume.Decision{Action: consume.RetryLater, Reason: consume.ReasonInProgress, RetryAfter: time.Second}
	require.Equal(t, "retry later (in progress) after 1s", d.String())
	require.Equal(t, "ack (done)", consume.Decision{Action: consume.Ack, Reason: consume.ReasonDone}.String())
	require.Equal(t, "dead letter", consume.DeadLetter.String())
	require.Equal(t, "unknown action", consume.Action(0).String())
	require.Nil(t, consume.Reject(nil))
	require.EqualError(t, &once.PanicError{Value: errStoreDown}, "once: handler panicked: connection refused")
	require.ErrorIs(t, &once.PanicError{Value: errStoreDown}, errStoreDown)
}
