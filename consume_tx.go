package once

import (
	"context"

	"github.com/stagedoor/once/backends"
)

// Tx is the transaction a ConsumeTx handler writes through. pgx.Tx
// implements it.
type Tx interface {
	Commit(ctx context.Context) error
	Rollback(ctx context.Context) error
}

// ConsumeTx is Consume inside one database transaction: begin opens the
// transaction and returns it with a store bound to it (for PostgreSQL,
// pool.Begin and Store.InTx), and the claim, the handler's writes through
// tx and the outcome commit together or not at all. A database effect made
// through tx then happens exactly once per key, whatever kills the
// consumer and whenever: a crash before the commit leaves neither the
// effect nor the claim, and the redelivery runs the handler again.
//
// ConsumeTx commits when the decision is Ack (the handler's success or
// final error is recorded, or a stored answer is replayed) and rolls back
// otherwise; an outcome the store failed to record rolls back too and is
// answered RetryLater with ReasonStoreDown, since the effect is undone. A failed begin is answered RetryLater with ReasonStoreDown
// and the handler does not run. A failed commit after the handler ran is
// answered RetryLater with ReasonStoreDown too: the transaction then either
// committed (the connection broke after the server committed) or did not,
// so the redelivery either replays the outcome or runs the handler again,
// never both.
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
// outcome cap dead-letters (ReasonTooLarge) and rolls the transaction
// back: the handler's writes and the claim are undone, so a redelivery
// runs the handler again.
func ConsumeValueTx[X Tx, T any](ctx context.Context, scope Scope, key string, fp Fingerprint, begin func(context.Context) (X, backends.Store, error), handler func(context.Context, X) (T, error)) (v T, d Decision) {
	if begin == nil || handler == nil {
		return v, Decision{Action: RetryLater, Reason: ReasonMisconfigured, Err: &InvalidInputError{Field: "fn", Reason: "nil"}}
	}
	if err := ValidateKey(key); err != nil {
		return v, Decision{Action: DeadLetter, Reason: ReasonInvalidKey, Err: err}
	}
	if ctx == nil {
		return v, Decision{Action: RetryLater, Reason: ReasonMisconfigured, Err: &InvalidInputError{Field: "ctx", Reason: "nil"}}
	}
	tx, store, err := begin(ctx)
	if err != nil {
		return v, Decision{Action: RetryLater, Reason: ReasonStoreDown, RetryAfter: StoreRetryAfter, Err: &StoreError{Op: "begin", Err: err}}
	}
	committed := false
	defer func() {
		if !committed {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	v, d = ConsumeValue(ctx, scope.WithStore(store), key, fp, func(ctx context.Context) (T, error) { return handler(ctx, tx) })
	var zero T
	if d.Reason == ReasonUnrecorded {
		// Unlike outside a transaction, the effect is not done: it rolls
		// back with the claim, so the message must be delivered again.
		return zero, Decision{Action: RetryLater, Reason: ReasonStoreDown, RetryAfter: StoreRetryAfter, Err: d.Err}
	}
	if d.Action != Ack {
		return v, d
	}
	committed = true
	if err := tx.Commit(ctx); err != nil && d.Reason != ReasonReplayed && d.Reason != ReasonReplayedFinal {
		return zero, Decision{Action: RetryLater, Reason: ReasonStoreDown, RetryAfter: StoreRetryAfter, Err: &StoreError{Op: "commit", Err: err}}
	}
	return v, d
}
