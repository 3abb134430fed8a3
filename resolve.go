package once

import (
	"context"

	"github.com/stagedoor/once/backends"
)

// Resolve stores the outcome of a key whose outcome was held (see Hold) or
// never recorded, as found out by a reconciliation job: value when err is
// nil, else err as a final error. Every later call with the key replays it.
// An err whose marks make it held or retryable, by the rule Do classifies
// with (see WithClassifier: the most cautious of its outermost marks), is not
// an answer: Resolve refuses it with an *InvalidInputError (Field "err")
// before any store call, and the key stays as it is. An err with no mark is
// final, whatever the Keeper's classifier says.
//
// Resolve stores the outcome whether the key is absent, held, or in
// progress with a lapsed lease (its owner presumably crashed), whoever
// holds the claim (a held owner's later completion is refused). It leaves
// a key whose owner is running fn now (its lease is live): nothing is
// stored, the owner keeps its claim, and Resolve returns an
// *InProgressError (Held false; LeaseRemaining is the owner's lease left),
// decided by the store in the same atomic step as the write, so a claim
// taken just before the Resolve is left too. It never overwrites a
// completed key: it returns ErrAlreadyCompleted then, and ErrKeyReused when
// the key is bound to another fingerprint, and an *InProgressError (Held)
// while a reconciler (package reconcile) holds a live lease on the held key (it is asking the
// downstream service; retry after RetryAfter), or an *InProgressError (not
// Held) when the store could not reach the key in time (a SQL store waiting
// for a transaction that holds it uncommitted). The Keeper's observers see
// an EventResolved when the outcome is stored, and an EventStoreError when
// the store fails.
func Resolve[T any](ctx context.Context, scope Scope, key string, fp Fingerprint, value T, err error) error {
	if vErr := scope.validate(ctx, key, fp); vErr != nil {
		return vErr
	}
	cfg := scope.cfg
	data, inner, encErr := encodeResolution(cfg, cfg.codec, value, err)
	if encErr != nil {
		return encErr
	}
	start := cfg.clock()
	res, sErr := scope.store.Resolve(ctx, backends.ResolveParams{
		Scope: scope.name, Key: key, Fingerprint: fp, Owner: newToken(), Outcome: data, Retention: cfg.retention,
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
		// sets Held from the state). Held: a reconciler's live lease on
		// the held key refused it; that reconciler is asking and may
		// resolve it itself. Pending: a claim the store could not take
		// from, as a SQL store that gave up waiting for a transaction
		// holding the key uncommitted (its lock timeout), or a live
		// claim; retry.
		return newInProgress(res.Existing)
	}
	return ErrAlreadyCompleted
}

// encodeResolution encodes the outcome Resolve stores (package reconcile's verdicts too):
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
		return &InvalidInputError{Field: "err", Reason: "held by its marks (see WithClassifier): an unknown outcome is not an answer"}
	case ClassRetry:
		return &InvalidInputError{Field: "err", Reason: "retryable by its marks (see WithClassifier): a retryable error is not an answer"}
	}
	return nil
}
