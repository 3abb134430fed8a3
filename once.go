package once

import (
	"context"
	"time"

	"github.com/stagedoor/once/backends"
)

// Do runs fn at most once per (scope, key) within the retention period and
// returns its outcome to every call with the same key, however often the
// call is retried and from however many goroutines or processes share the
// store. The first call claims the key atomically, runs fn and stores its
// value or final error; a later call with a matching fingerprint gets that
// outcome without running fn, one with another fingerprint ErrKeyReused,
// and one that arrives while fn runs an *InProgressError (ErrInProgress),
// or, with WithWait, the outcome once fn ends. The first caller receives
// exactly what every replay receives. An error fn returns unmarked is
// retryable: not stored, the claim released, so the next call runs fn
// again. A claim whose owner died is taken over when its lease ends. Do
// validates its input before any store call (*InvalidInputError) and fails
// closed: when the store cannot be reached, fn does not run (*StoreError).
// The package documentation states the corner cases: replay fidelity,
// panics, leases, and when Do returns.
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
			return execute(ctx, scope, key, owner, sent, claimed, res.Steps, fn)
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
