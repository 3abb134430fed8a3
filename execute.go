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
		r = startRenewer(detached, store, cfg, backends.RenewParams{Scope: scope.name, Key: key, Owner: owner, Lease: cfg.lease}, cancel)
	}
	release := func() {
		r.stop()
		wctx, done := context.WithTimeout(detached, writeTimeout)
		defer done()
		start := cfg.clock()
		_, err := store.Release(wctx, backends.ReleaseParams{Scope: scope.name, Key: key, Owner: owner})
		if err != nil {
			cfg.emit(ctx, Event{Kind: EventStoreError, Scope: scope.name, Key: key, Op: "release", Duration: cfg.since(start), Err: err})
			return
		}
		cfg.emit(ctx, Event{Kind: EventReleased, Scope: scope.name, Key: key, Duration: cfg.since(start)})
	}

	start := cfg.clock()
	v, err := runFn(fnCtx, fn, release)
	class, fnErr := Retryable, error(nil)
	if err != nil {
		class, fnErr = classify(err, cfg.classifier)
	}
	cfg.emit(ctx, Event{Kind: EventExecuted, Scope: scope.name, Key: key, Duration: cfg.since(start), Class: class, Err: fnErr})
	if err == nil {
		return record(ctx, detached, scope, key, owner, r, v, nil)
	}
	switch class {
	case FinalClass:
		return record(ctx, detached, scope, key, owner, r, v, fnErr)
	case HeldClass:
		r.stop()
		cfg.emit(ctx, Event{Kind: EventHeld, Scope: scope.name, Key: key, Err: fnErr})
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
// returns what Do answers. Writes use the detached context; events get the
// caller's.
func record[T any](callCtx, ctx context.Context, scope Scope, key, owner string, r *renewer, v T, fnErr error) (Outcome[T], error) {
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
	start := cfg.clock()
	applied, err := complete(callCtx, ctx, scope, key, owner, data)
	switch {
	case err != nil:
		cfg.emit(callCtx, Event{Kind: EventUnrecorded, Scope: scope.name, Key: key, Duration: cfg.since(start), Err: err})
		return Outcome[T]{Value: v}, errors.Join(fnErr, &UnrecordedError{Err: err})
	case !applied:
		cfg.emit(callCtx, Event{Kind: EventLeaseLost, Scope: scope.name, Key: key, Duration: cfg.since(start), Err: ErrLeaseLost})
		return Outcome[T]{Value: v}, errors.Join(fnErr, ErrLeaseLost)
	default:
		cfg.emit(callCtx, Event{Kind: EventRecorded, Scope: scope.name, Key: key, Duration: cfg.since(start)})
		return Outcome[T]{Value: v, Recorded: true}, answer
	}
}

// complete stores the outcome, retrying a failing store a few times.
func complete(callCtx, ctx context.Context, scope Scope, key, owner string, data []byte) (bool, error) {
	cfg := scope.cfg
	p := backends.CompleteParams{Scope: scope.name, Key: key, Owner: owner, Outcome: data, Retention: scope.cfg.retention}
	var err error
	for attempt := range completeAttempts {
		if attempt > 0 {
			time.Sleep(completeBackoff << (attempt - 1))
		}
		wctx, done := context.WithTimeout(ctx, writeTimeout)
		start := cfg.clock()
		var applied bool
		applied, err = scope.store.Complete(wctx, p)
		done()
		if err == nil {
			return applied, nil
		}
		cfg.emit(callCtx, Event{Kind: EventStoreError, Scope: scope.name, Key: key, Op: "complete", Duration: cfg.since(start), Err: err})
	}
	return false, err
}
