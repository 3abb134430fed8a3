package once

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stagedoor/once/backends"
)

// Bounds of the writes made after fn returns. They run on a context
// detached from the caller's cancellation, so that a caller who gave up
// does not leave the outcome unrecorded or the claim held.
const (
	completeAttempts = 3
	completeBackoff  = 25 * time.Millisecond
	writeTimeout     = 5 * time.Second
)

// execute runs fn under the claim owned by owner and records its outcome.
func execute[T any](ctx context.Context, scope Scope, key, owner string, fn func(context.Context) (T, error)) (Outcome[T], error) {
	cfg, store := scope.cfg, scope.store
	detached := context.WithoutCancel(ctx)
	fnCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	var r *renewer
	if _, exclusive := store.(backends.Exclusive); !exclusive {
		r = startRenewer(detached, store, backends.RenewParams{Scope: scope.name, Key: key, Owner: owner, Lease: cfg.lease}, cancel)
	}
	release := func() {
		r.stop()
		wctx, done := context.WithTimeout(detached, writeTimeout)
		defer done()
		_, _ = store.Release(wctx, backends.ReleaseParams{Scope: scope.name, Key: key, Owner: owner})
	}

	v, err := runFn(fnCtx, fn, release)
	if err == nil {
		return record(detached, scope, key, owner, r, v, nil)
	}
	class, fnErr := classify(err, cfg.classifier)
	switch class {
	case FinalClass:
		return record(detached, scope, key, owner, r, v, fnErr)
	case HeldClass:
		r.stop()
		return Outcome[T]{Value: v}, fnErr
	default:
		release()
		if errors.Is(context.Cause(fnCtx), ErrLeaseLost) {
			return Outcome[T]{Value: v}, errors.Join(fnErr, ErrLeaseLost)
		}
		return Outcome[T]{Value: v}, fnErr
	}
}

// runFn calls fn; if fn panics or calls runtime.Goexit, abort runs before
// the panic continues unchanged (same value, same stack).
func runFn[T any](ctx context.Context, fn func(context.Context) (T, error), abort func()) (v T, err error) {
	returned := false
	defer func() {
		if !returned {
			abort()
		}
	}()
	v, err = fn(ctx)
	returned = true
	return v, err
}

// record completes the claim with fn's value (fnErr nil) or final error and
// returns what Do answers.
func record[T any](ctx context.Context, scope Scope, key, owner string, r *renewer, v T, fnErr error) (Outcome[T], error) {
	cfg := scope.cfg
	var data []byte
	var answer error
	if fnErr != nil {
		data, answer = encodeError(cfg, fnErr), fnErr
	} else {
		enc, err := encodeValue(cfg.codec, v)
		if err != nil {
			err = fmt.Errorf("once: outcome cannot be encoded: %w", err)
			enc, answer = encodeError(cfg, err), err
		}
		data = enc
	}
	if len(data) > cfg.maxOutcome {
		answer = &OutcomeTooLargeError{Size: len(data), Limit: cfg.maxOutcome}
		data = encodeTooLarge()
	}
	r.stop()
	applied, err := complete(ctx, scope, key, owner, data)
	switch {
	case err != nil:
		return Outcome[T]{Value: v}, errors.Join(fnErr, &UnrecordedError{Err: err})
	case !applied:
		return Outcome[T]{Value: v}, errors.Join(fnErr, ErrLeaseLost)
	default:
		return Outcome[T]{Value: v, Recorded: true}, answer
	}
}

// complete stores the outcome, retrying a failing store a few times.
func complete(ctx context.Context, scope Scope, key, owner string, data []byte) (bool, error) {
	p := backends.CompleteParams{Scope: scope.name, Key: key, Owner: owner, Outcome: data, Retention: scope.cfg.retention}
	var err error
	for attempt := range completeAttempts {
		if attempt > 0 {
			time.Sleep(completeBackoff << (attempt - 1))
		}
		wctx, done := context.WithTimeout(ctx, writeTimeout)
		var applied bool
		applied, err = scope.store.Complete(wctx, p)
		done()
		if err == nil {
			return applied, nil
		}
	}
	return false, err
}
