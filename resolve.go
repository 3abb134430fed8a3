package once

import (
	"context"

	"github.com/stagedoor/once/backends"
)

// Resolve stores the outcome of a key whose outcome was held (see Hold) or
// never recorded, as found out by a reconciliation job: value when err is
// nil, else err as a final error. Every later call with the key replays it.
//
// Resolve stores the outcome whether the key is absent or in progress, and
// whoever holds the claim (a held owner's later completion is refused). It
// never overwrites a completed key: it returns ErrAlreadyCompleted then, and
// ErrKeyReused when the key is bound to another fingerprint.
func Resolve[T any](ctx context.Context, scope Scope, key string, fp Fingerprint, value T, err error) error {
	if vErr := scope.validate(ctx, key, fp); vErr != nil {
		return vErr
	}
	cfg := scope.cfg
	var data []byte
	if err != nil {
		_, inner := classify(err, nil)
		data = encodeError(cfg, inner)
	} else {
		enc, encErr := encodeValue(cfg.codec, value)
		if encErr != nil {
			return encErr
		}
		data = enc
	}
	if len(data) > cfg.maxOutcome {
		return &OutcomeTooLargeError{Size: len(data), Limit: cfg.maxOutcome}
	}
	res, sErr := scope.store.Resolve(ctx, backends.ResolveParams{
		Scope: scope.name, Key: key, Fingerprint: fp, Owner: newToken(), Outcome: data, Retention: cfg.retention,
	})
	if sErr != nil {
		return &StoreError{Op: "resolve", Err: sErr}
	}
	if res.Resolved {
		return nil
	}
	if !backends.FingerprintMatches(res.Existing.Fingerprint, fp) {
		return ErrKeyReused
	}
	return ErrAlreadyCompleted
}
