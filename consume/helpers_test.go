package consume_test

import (
	"context"
	"errors"

	"github.com/stagedoor/once/backends"
)

var errStoreDown = errors.New("connection refused")

// CardDeclinedError is a final error registered with the Keeper, so that
// its type comes back on a replay.
type CardDeclinedError struct {
	Reason string `json:"reason"`
}

func (e *CardDeclinedError) Error() string { return "card declined: " + e.Reason }

// faults is a store whose methods fail as its fields say.
type faults struct {
	backends.Store
	claimErr, completeErr, renewErr, holdErr error
	completeLost                             bool // Complete finds another owner
}

func (f *faults) Claim(ctx context.Context, p backends.ClaimParams) (backends.ClaimResult, error) {
	if f.claimErr != nil {
		return backends.ClaimResult{}, f.claimErr
	}
	return f.Store.Claim(ctx, p)
}

func (f *faults) Complete(ctx context.Context, p backends.CompleteParams) (bool, error) {
	switch {
	case f.completeErr != nil:
		return false, f.completeErr
	case f.completeLost:
		return false, nil
	}
	return f.Store.Complete(ctx, p)
}

func (f *faults) Renew(ctx context.Context, p backends.RenewParams) (bool, error) {
	if f.renewErr != nil {
		return false, f.renewErr
	}
	return f.Store.Renew(ctx, p)
}

func (f *faults) Hold(ctx context.Context, p backends.HoldParams) (bool, error) {
	if f.holdErr != nil {
		return false, f.holdErr
	}
	return f.Store.Hold(ctx, p)
}
