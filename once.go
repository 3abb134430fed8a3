package once

import (
	"context"
	"time"

	"github.com/stagedoor/once/backends"
)

// Do runs fn at most once per (scope, key) within the retention period and
// returns its outcome to every call with the same key, however often the
// call is retried and from however many goroutines or processes share the
// store.
//
// The first call claims the key atomically in the store, runs fn and
// stores its value or final error. A later call with the same key and a
// matching fingerprint receives that stored outcome without running fn; a
// call with another fingerprint receives ErrKeyReused and never the stored
// outcome; a call that arrives while the first is still running receives an
// *InProgressError (ErrInProgress) at once, or, with WithWait, the outcome
// once the first finishes. A claim whose owner died is taken over when its
// lease ends, and fn runs again.
//
// The first caller receives exactly what every replay receives: fn's
// value after the codec's round trip (unless the codec declares itself lossless: see Codec),
// and a final error — one marked with Final, or classified final — in its
// stored form: its full text, and its type when it is registered with
// RegisterError (wrapped in a *StoredError with the original text when the
// registered error was wrapped), else a *StoredError. Errors marked with
// Hold keep the key held (in progress, Held) for the hold period (WithHoldFor). Every other error,
// context cancellation included, is retryable: it is not stored, the claim
// is released so the next call runs fn again, and Do returns it as fn
// returned it.
//
// A panic in fn, in the classifier, or in the observer on EventClaimed
// (before fn runs) releases the claim and stops renewal before Do panics
// with the same value: no renewal is sent after Do returns or panics. Once
// fn has returned, its effect has happened, so a panic in a hook changes
// nothing of how the key is settled, and Do panics with its value after
// the key is settled: an outcome whose encoding panics (the codec, a
// value's MarshalJSON, a final error's Error or ErrorCode), or whose
// decoding for the first answer does, is stored as an outcome the codec
// refuses is, as a final error saying so ("once: outcome cannot be
// encoded: panic: …"); a held error whose Error or ErrorCode panics holds
// the key with a placeholder text; a panicking observer leaves the outcome
// recorded, held or released as it would have been.
//
// While fn runs, Do renews the lease; if the claim is lost (taken over by
// another caller after a pause longer than the lease), or renewals cannot
// prove it in time (WithLease says when), fn's context is cancelled with
// cause ErrLeaseLost, and a Do whose claim was taken over returns
// ErrLeaseLost without overwriting the new owner's outcome. If the store
// cannot record fn's outcome, or cannot hold the key after a held error,
// Do returns the value (and fn's error) with ErrOutcomeUnrecorded, and the
// key runs fn again after its lease.
//
// Once fn has returned, Do waits for nothing but the store write that
// settles the claim and the hooks it calls (tracer, observer, codec,
// classifier, a held error's methods): a renewal in flight then is abandoned, never
// waited for, and fenced by the owner token (a Renew writes nothing to a
// completed, held or released claim). The write is a Complete or a Hold
// tried at most three times, or one Release, each attempt on a context
// detached from ctx's cancellation whose deadline is at most a fixed write
// timeout and, for a Complete or a Hold, at most two thirds of the lease
// after the attempt starts. With a store that returns when its context
// ends, Do therefore returns within three such deadlines and two short
// pauses of fn's end, plus the time its hooks take, whatever a renewal in
// flight does. A Renew that ignores its context may outlive Do, on its
// own goroutine, until the store returns it; its result is discarded, and
// it reports no event.
//
// Do validates scope, key and fingerprint before touching the store and
// returns an *InvalidInputError for bad input. It fails closed: when the
// store cannot be reached, fn does not run and Do returns a *StoreError.
func Do[T any](ctx context.Context, scope Scope, key string, fp Fingerprint, fn func(context.Context) (T, error)) (T, error) {
	out, err := DoOutcome(ctx, scope, key, fp, fn)
	return out.Value, err
}

// DoOutcome is Do, and also reports how the call ended (Outcome.Status):
// whether the answer was replayed from the store, and otherwise what
// became of the key after fn ran.
func DoOutcome[T any](ctx context.Context, scope Scope, key string, fp Fingerprint, fn func(context.Context) (T, error)) (Outcome[T], error) {
	if ctx != nil && scope.cfg != nil && scope.cfg.tracer != nil {
		return traced(ctx, scope.cfg.tracer, scope.name, key, func(ctx context.Context, recovered *bool) (Outcome[T], error) {
			if fn == nil {
				return doOutcome(ctx, scope, key, fp, fn)
			}
			return doOutcome(ctx, scope, key, fp, func(ctx context.Context) (T, error) {
				v, err := fn(ctx)
				*recovered = returnsPanic(err)
				return v, err
			})
		})
	}
	return doOutcome(ctx, scope, key, fp, fn)
}

func doOutcome[T any](ctx context.Context, scope Scope, key string, fp Fingerprint, fn func(context.Context) (T, error)) (Outcome[T], error) {
	if err := scope.validate(ctx, key, fp); err != nil {
		return Outcome[T]{}, err
	}
	if fn == nil {
		return Outcome[T]{}, &InvalidInputError{Field: "fn", Reason: "nil"}
	}
	cfg := scope.cfg
	var waitUntil time.Time
	var waiter *waiter
	defer func() { waiter.close() }()
	for {
		owner := newToken()
		sent := now()
		start := cfg.clock()
		res, err := scope.store.Claim(ctx, backends.ClaimParams{
			Scope: scope.name, Key: key, Fingerprint: fp, Owner: owner,
			Lease: cfg.lease, Retention: cfg.retention,
		})
		if err != nil {
			cfg.emit(ctx, Event{Kind: EventStoreError, Scope: scope.name, Key: key, Op: "claim", StoreTime: cfg.since(start), Err: err})
			return Outcome[T]{}, &StoreError{Op: "claim", Err: err}
		}
		if res.Claimed {
			claimed := Event{Kind: EventClaimed, Scope: scope.name, Key: key, Op: "claim", StoreTime: cfg.since(start), TookOver: res.TookOver}
			return execute(ctx, scope, key, owner, sent, claimed, fn)
		}
		rec := res.Existing
		if !backends.FingerprintMatches(rec.Fingerprint, fp) {
			cfg.emit(ctx, Event{Kind: EventKeyReused, Scope: scope.name, Key: key, Op: "claim", StoreTime: cfg.since(start)})
			return Outcome[T]{}, ErrKeyReused
		}
		if rec.State == backends.StateCompleted {
			out, finalErr, decodeErr := replay[T](cfg, rec.Outcome)
			cfg.emit(ctx, Event{Kind: EventReplayed, Scope: scope.name, Key: key, Op: "claim", StoreTime: cfg.since(start), FnErr: finalErr, Err: decodeErr})
			if decodeErr != nil {
				return out, decodeErr
			}
			return out, finalErr
		}
		inProgress := newInProgress(rec)
		if cfg.wait <= 0 || waiter != nil && !time.Now().Before(waitUntil) {
			cfg.emit(ctx, Event{Kind: EventInProgress, Scope: scope.name, Key: key, Op: "claim", StoreTime: cfg.since(start)})
			return Outcome[T]{}, inProgress
		}
		if waiter == nil {
			waitUntil = time.Now().Add(cfg.wait)
			waiter = newWaiter(scope.store)
		}
		if err := waiter.wait(ctx, scope.name, key, inProgress.blocked(), waitUntil); err != nil {
			return Outcome[T]{}, err
		}
	}
}

func newInProgress(rec backends.Record) *InProgressError {
	leaseRemaining := max(rec.LeaseRemaining, 0)
	if rec.State != backends.StateHeld {
		return &InProgressError{RetryAfter: min(leaseRemaining, time.Second), LeaseRemaining: leaseRemaining}
	}
	e := &InProgressError{
		LeaseRemaining: leaseRemaining, Held: true,
		HoldRemaining: max(rec.Held.Remaining, 0), HeldFor: max(rec.Age, 0),
	}
	// The key is claimable once both the hold and a reconciler's lease end.
	e.RetryAfter = max(e.HoldRemaining, leaseRemaining)
	return e
}

// blocked is how long the key stays unclaimable at most, by the store's
// clock: the owner's lease for a running claim, RetryAfter for a held key.
func (e *InProgressError) blocked() time.Duration {
	if e.Held {
		return e.RetryAfter
	}
	return e.LeaseRemaining
}

func replay[T any](cfg *config, stored []byte) (out Outcome[T], finalErr, decodeErr error) {
	v, finalErr, decodeErr := decodeOutcome[T](cfg, stored)
	if decodeErr != nil {
		return Outcome[T]{}, nil, decodeErr
	}
	return Outcome[T]{Value: v, Status: Replayed}, finalErr, nil
}
