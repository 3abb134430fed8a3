package once

import (
	"context"

	"github.com/stagedoor/once/backends"
)

// Resolve stores the outcome of a key whose outcome was held (see Hold) or
// never recorded, as found out by a reconciliation job: value when err is
// nil, else err as a final error. Every later call with the key replays it.
// An err whose marks make it held or retryable, by the rule Do classifies
// with (see Classifier: the most cautious of its outermost marks), is not
// an answer: Resolve refuses it with an *InvalidInputError (Field "err")
// before any store call, and the key stays as it is. An err with no mark is
// final, whatever the Keeper's classifier says.
//
// Resolve stores the outcome whether the key is absent or in progress, and
// whoever holds the claim (a held owner's later completion is refused). It
// never overwrites a completed key: it returns ErrAlreadyCompleted then, and
// ErrKeyReused when the key is bound to another fingerprint, and an
// *InProgressError (Held) while a Reconciler holds a live lease on the held
// key (it is asking the downstream service; retry after RetryAfter), or an
// *InProgressError (not Held) when the store could not reach the key in
// time (a SQL store waiting for a transaction that holds it uncommitted). The Keeper's
// observers see an EventResolved when the outcome is stored, and an
// EventStoreError when the store fails.
//
// With RefuseLiveClaim, Resolve also leaves a key whose owner is running
// fn now (see RefuseLiveClaim).
func Resolve[T any](ctx context.Context, scope Scope, key string, fp Fingerprint, value T, err error, opts ...ResolveOption) error {
	if vErr := scope.validate(ctx, key, fp); vErr != nil {
		return vErr
	}
	cfg := scope.cfg
	data, inner, encErr := encodeResolution(cfg, cfg.codec, value, err)
	if encErr != nil {
		return encErr
	}
	var o resolveOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	start := cfg.clock()
	res, sErr := scope.store.Resolve(ctx, backends.ResolveParams{
		Scope: scope.name, Key: key, Fingerprint: fp, Owner: newToken(), Outcome: data, Retention: cfg.retention,
		RefuseLiveClaim: o.refuseLiveClaim,
	})
	if sErr != nil {
		cfg.emit(ctx, Event{Kind: EventStoreError, Scope: scope.name, Key: key, Op: "resolve", StoreTime: cfg.since(start), Err: sErr})
		return &StoreError{Op: "resolve", Err: sErr}
	}
	if res.Resolved {
		cfg.emit(ctx, Event{Kind: EventResolved, Scope: scope.name, Key: key, Op: "resolve", StoreTime: cfg.since(start), FnErr: inner})
		return nil
	}
	if !backends.FingerprintMatches(res.Existing.Fingerprint, fp) {
		return ErrKeyReused
	}
	switch res.Existing.State {
	case backends.StateHeld, backends.StatePending:
		// Nothing was completed; the key is in progress (newInProgress
		// sets Held from the state). Held: a Reconciler's live lease on
		// the held key refused it; that Reconciler is asking and may
		// resolve it itself. Pending: a claim the store could not take
		// from, as a SQL store that gave up waiting for a transaction
		// holding the key uncommitted (its lock timeout), or, with
		// RefuseLiveClaim, a live claim; retry.
		return newInProgress(res.Existing)
	}
	return ErrAlreadyCompleted
}

// ResolveOption configures one Resolve call (and one
// oncehttp.ResolveResponse).
type ResolveOption func(*resolveOptions)

type resolveOptions struct {
	refuseLiveClaim bool
}

// RefuseLiveClaim makes Resolve leave a key that is in progress with a
// live lease, its owner running fn now: nothing is stored, the owner keeps
// its claim and completes it, and Resolve returns an *InProgressError
// (Held false; LeaseRemaining is the owner's lease left). The store
// decides it in the same atomic step as the write
// (backends.ResolveParams.RefuseLiveClaim), so a claim taken just before
// the Resolve is left too, which a read of the key followed by a Resolve
// cannot promise. A key whose owner's lease has lapsed (it presumably
// crashed), a held key and an absent key are resolved as without it.
//
// Without it (the default) Resolve stores over a running claim, whose
// owner then loses its lease: its result is dropped and every retry
// replays the resolved outcome.
func RefuseLiveClaim() ResolveOption {
	return func(o *resolveOptions) { o.refuseLiveClaim = true }
}

// encodeResolution encodes the outcome Resolve and a Reconciler store:
// the final error err (inner is err without its class marker, as stored)
// or, when err is nil, value with codec, within cfg's size limit. An err
// that is no answer is refused (see answerProblem).
func encodeResolution[T any](cfg *config, codec Codec, value T, err error) (data []byte, inner, encErr error) {
	if err != nil {
		var class Class
		class, inner = classify(err, unmarkedIsFinal)
		if pErr := answerProblem(class); pErr != nil {
			return nil, nil, pErr
		}
		data = encodeError(cfg, inner)
	} else if data, encErr = encodeValue(codec, value); encErr != nil {
		return nil, nil, encErr
	}
	if len(data) > cfg.maxOutcome {
		return nil, nil, &OutcomeTooLargeError{Size: len(data), Limit: cfg.maxOutcome}
	}
	return data, inner, nil
}

// unmarkedIsFinal is the classifier of an error given as a key's answer
// (to Resolve, or as a settled Verdict's Err): one with no mark is final,
// as Resolve documents, whatever the Keeper's classifier says.
func unmarkedIsFinal(error) Class { return ClassFinal }

// answerProblem refuses, as an *InvalidInputError (Field "err"), an error
// given as a key's answer whose marks (classify) make it no answer: held
// (the outcome is unknown) or retryable (nothing happened; the next call
// runs fn again). Storing it would make it the key's final answer for the
// retention.
func answerProblem(class Class) error {
	switch class {
	case ClassHold:
		return &InvalidInputError{Field: "err", Reason: "held by its marks (see Classifier): an unknown outcome is not an answer"}
	case ClassRetry:
		return &InvalidInputError{Field: "err", Reason: "retryable by its marks (see Classifier): a retryable error is not an answer"}
	}
	return nil
}
