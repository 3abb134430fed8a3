package once

import (
	"context"

	"github.com/stagedoor/once/backends"
)

// ConsumeTx is Consume inside one database transaction, run by DoTx:
// begin opens the transaction and returns it with the store bound to it
// (a SQL store's BeginTx), and the claim, the handler's writes through tx
// and the outcome commit together or not at all. A database effect made
// through tx then happens exactly once per key, whatever kills the
// consumer and whenever: a crash before the commit leaves neither the
// effect nor the claim, and the redelivery runs the handler again.
//
// The decisions are Consume's, but for an outcome that is not committed:
// DoTx rolls back an outcome the store failed to record, and a commit
// that fails leaves the outcome and the effect either both committed or
// both undone, so either is answered RetryLater with ReasonStoreDown (the
// redelivery replays the outcome or runs the handler again, never both);
// so is a failed begin, the handler not having run. A Hold error keeps
// the key held, as Consume does: DoTx rolls the handler's writes back and
// commits the key held (ReasonHeld); when it cannot, the whole
// transaction rolls back and the answer is ReasonStoreDown, its Err
// joining the handler's error to ErrOutcomeUnrecorded.
func ConsumeTx[X Tx](ctx context.Context, scope Scope, key string, fp Fingerprint, begin func(context.Context) (X, backends.Store, error), handler func(context.Context, X) error) Decision {
	var fn func(context.Context, X) (struct{}, error)
	if handler != nil {
		fn = func(ctx context.Context, tx X) (struct{}, error) { return struct{}{}, handler(ctx, tx) }
	}
	_, d := ConsumeValueTx(ctx, scope, key, fp, begin, fn)
	return d
}

// ConsumeValueTx is ConsumeTx for a handler that returns a value, stored
// and replayed as ConsumeValue stores and replays it. A value over the
// outcome cap is committed as the key's final error with the handler's
// writes, and dead-letters (ReasonTooLarge), as ConsumeValue's does.
func ConsumeValueTx[X Tx, T any](ctx context.Context, scope Scope, key string, fp Fingerprint, begin func(context.Context) (X, backends.Store, error), handler func(context.Context, X) (T, error)) (v T, d Decision) {
	if handler == nil {
		return v, misconfigured()
	}
	return consumeValue(ctx, true, func() (Outcome[T], error) {
		return DoTxOutcome(ctx, scope, key, fp, begin, func(ctx context.Context, tx X) (T, error) {
			v, err := handler(ctx, tx)
			return v, rejectable(err)
		})
	})
}
