package consume

import (
	"context"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
)

// DoTx is Do inside one database transaction, run by once.DoTx: begin
// opens the transaction and returns it with the store bound to it (a SQL
// store's BeginTx), and the claim, the handler's writes through tx and
// the outcome commit together or not at all. A database effect made
// through tx then happens exactly once per key, whatever kills the
// consumer and whenever: a crash before the commit leaves neither the
// effect nor the claim, and the redelivery runs the handler again.
//
// The decisions are Do's, but for an outcome that is not committed:
// once.DoTx rolls back an outcome the store failed to record, and a
// commit that fails leaves the outcome and the effect either both
// committed or both undone, so either is answered RetryLater with
// ReasonStoreDown (the redelivery replays the outcome or runs the handler
// again, never both); so is a failed begin, the handler not having run. A
// Hold error keeps the key held, as with Do: once.DoTx undoes the
// handler's writes and commits the key held (ReasonHeld); when it cannot,
// the whole transaction rolls back and the answer is ReasonStoreDown, its
// Err joining the handler's error to once.ErrOutcomeUnrecorded.
func DoTx[X once.Tx](ctx context.Context, scope once.Scope, key string, fp once.Fingerprint, begin func(context.Context) (X, backends.Store, error), handler func(context.Context, X) error) Decision {
	var fn func(context.Context, X) (struct{}, error)
	if handler != nil {
		fn = func(ctx context.Context, tx X) (struct{}, error) { return struct{}{}, handler(ctx, tx) }
	}
	_, d := ValueTx(ctx, scope, key, fp, begin, fn)
	return d
}

// ValueTx is DoTx for a handler that returns a value, stored and replayed
// as Value stores and replays it. A value over the outcome cap is
// committed as the key's final error with the handler's writes, and
// dead-letters (ReasonTooLarge), as Value's does.
func ValueTx[X once.Tx, T any](ctx context.Context, scope once.Scope, key string, fp once.Fingerprint, begin func(context.Context) (X, backends.Store, error), handler func(context.Context, X) (T, error)) (T, Decision) {
	if handler == nil {
		var zero T
		return zero, nilHandler()
	}
	return run(ctx, true, func() (once.Outcome[T], error) {
		return once.DoTxOutcome(ctx, scope, key, fp, begin, func(ctx context.Context, tx X) (T, error) {
			v, err := handler(ctx, tx)
			return v, rejectable(err)
		})
	})
}
