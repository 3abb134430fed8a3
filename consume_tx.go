package once

import (
	"context"
	"errors"

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
//
// A Hold error (the handler's outcome is unknown: an effect outside the
// transaction, a call to a payment provider, may have happened) keeps the
// key held, as Consume does: with a store that implements
// backends.Savepointer (PostgreSQL's and MySQL's InTx stores do),
// ConsumeTx marks the transaction with a savepoint after the claim (one
// more round trip before the handler runs), rolls the handler's writes
// back to it, holds the claim in the transaction and commits the claim,
// now held, on a context detached from ctx's cancellation (a handler that
// gave up at ctx's deadline is the typical Hold), answering ReasonHeld.
// If the savepoint, the rollback to it, the hold or that commit fails, the
// key is not held: the whole transaction rolls back and the answer is
// RetryLater with ReasonStoreDown, its Err joining the handler's error to
// the *StoreError (Op "savepoint", "rollback to savepoint", "hold" or
// "commit"), so that the redelivery, which runs the handler again, is not
// mistaken for a held key. With a store that cannot take savepoints, a
// Hold error is retryable (the claim rolls back with the handler's writes)
// and is answered ReasonHandlerError.
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
	h := txHold{store: store}
	h.sp, _ = store.(backends.Savepointer)
	if _, exclusive := store.(backends.Exclusive); exclusive && h.sp != nil {
		store = &h // records the core's Hold, keeping the Exclusive mark
	} else {
		h.sp = nil
	}
	v, d = consumeValue(ctx, scope.WithStore(store), key, fp, func(ctx context.Context) (T, error) {
		if h.sp != nil {
			if err := h.sp.Savepoint(ctx); err != nil {
				h.failed = &StoreError{Op: "savepoint", Err: err}
				var zero T
				return zero, Retry(h.failed) // the handler does not run
			}
		}
		return handler(ctx, tx)
	}, h.settle(ctx))
	var zero T
	switch {
	case h.failed != nil:
		return zero, Decision{Action: RetryLater, Reason: ReasonStoreDown, RetryAfter: StoreRetryAfter, Err: joinHandlerErr(d.Err, h.failed)}
	case d.Reason == ReasonUnrecorded:
		// Unlike outside a transaction, the effect is not done: it rolls
		// back with the claim, so the message must be delivered again.
		return zero, Decision{Action: RetryLater, Reason: ReasonStoreDown, RetryAfter: StoreRetryAfter, Err: d.Err}
	case d.Reason == ReasonHeld, d.Reason == ReasonLeaseLost && h.tried:
		// A Hold that found the claim no longer this transaction's is
		// answered lease lost by the core; commit answers it as a key
		// that could not be held, the transaction rolled back.
		return zero, h.commit(ctx, tx, d, &committed)
	case d.Action != Ack:
		return v, d
	}
	committed = true
	if err := tx.Commit(ctx); err != nil && d.Reason != ReasonReplayed && d.Reason != ReasonReplayedFinal {
		return zero, Decision{Action: RetryLater, Reason: ReasonStoreDown, RetryAfter: StoreRetryAfter, Err: &StoreError{Op: "commit", Err: err}}
	}
	return v, d
}

// txHold keeps a ConsumeTx key held: it is the transaction's store, with
// the core's Hold recorded, and its savepoint.
type txHold struct {
	store backends.Store
	sp    backends.Savepointer // nil: no savepoint, a Hold error is retryable

	tried   bool  // the core sent a Hold
	held    bool  // the core's Hold applied
	holdErr error // the core's Hold failed
	failed  error // a *StoreError: the key cannot be held, the transaction rolls back
}

// settle is consumeValue's hook: for a held error, it rolls the handler's
// writes back to the savepoint before the core holds the claim, on a
// context detached from ctx's cancellation, as the core's own writes are.
// Without a savepoint, or when the rollback fails, the error is retryable:
// the core then releases the claim, and the whole transaction rolls back.
func (h *txHold) settle(ctx context.Context) func(Class) Class {
	return func(class Class) Class {
		if class != ClassHold {
			return class
		}
		if h.sp == nil || h.failed != nil {
			return ClassRetry
		}
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
		defer cancel()
		if err := h.sp.RollbackToSavepoint(wctx); err != nil {
			h.failed = &StoreError{Op: "rollback to savepoint", Err: err}
			return ClassRetry
		}
		return ClassHold
	}
}

// commit commits the claim held in tx (the decision d is ReasonHeld) on a
// context detached from ctx's cancellation, and answers d, or
// ReasonStoreDown when the key could not be held.
func (h *txHold) commit(ctx context.Context, tx Tx, d Decision, committed *bool) Decision {
	fail := func(err error) Decision {
		return Decision{Action: RetryLater, Reason: ReasonStoreDown, RetryAfter: StoreRetryAfter, Err: joinHandlerErr(d.Err, err)}
	}
	switch {
	case h.holdErr != nil:
		return fail(&StoreError{Op: "hold", Err: h.holdErr})
	case !h.held:
		return fail(&StoreError{Op: "hold", Err: ErrLeaseLost})
	}
	*committed = true
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	if err := tx.Commit(cctx); err != nil {
		return fail(&StoreError{Op: "commit", Err: err})
	}
	return d
}

// joinHandlerErr joins the handler's error (if any) to err.
func joinHandlerErr(handlerErr, err error) error {
	if handlerErr == nil || handlerErr == err {
		return err
	}
	return errors.Join(handlerErr, err)
}

var (
	_ backends.Store     = (*txHold)(nil)
	_ backends.Exclusive = (*txHold)(nil)
)

// Exclusive implements backends.Exclusive: the store is bound to a
// transaction.
func (*txHold) Exclusive() {}

func (h *txHold) Claim(ctx context.Context, p backends.ClaimParams) (backends.ClaimResult, error) {
	return h.store.Claim(ctx, p)
}

func (h *txHold) Complete(ctx context.Context, p backends.CompleteParams) (bool, error) {
	return h.store.Complete(ctx, p)
}

func (h *txHold) Renew(ctx context.Context, p backends.RenewParams) (bool, error) {
	return h.store.Renew(ctx, p)
}

func (h *txHold) Release(ctx context.Context, p backends.ReleaseParams) (bool, error) {
	return h.store.Release(ctx, p)
}

func (h *txHold) Resolve(ctx context.Context, p backends.ResolveParams) (backends.ResolveResult, error) {
	return h.store.Resolve(ctx, p)
}

// Hold records whether the hold was written in the transaction: only then
// does ConsumeTx commit it.
func (h *txHold) Hold(ctx context.Context, p backends.HoldParams) (bool, error) {
	applied, err := h.store.Hold(ctx, p)
	h.tried, h.held, h.holdErr = true, applied && err == nil, err
	return applied, err
}

func (h *txHold) LeaseHeld(ctx context.Context, p backends.LeaseHeldParams) (backends.LeaseHeldResult, error) {
	return h.store.LeaseHeld(ctx, p)
}
