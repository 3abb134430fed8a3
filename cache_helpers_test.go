package once_test

import (
	"context"
	"sync/atomic"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
)

// countingStore counts the Claims that reach the store and, when gate is
// set, holds each Claim until gate is closed or the call's context ends.
type countingStore struct {
	backends.Store
	claims    atomic.Int64
	completes atomic.Int64
	gate      chan struct{}
}

func (s *countingStore) Claim(ctx context.Context, p backends.ClaimParams) (backends.ClaimResult, error) {
	s.claims.Add(1)
	if s.gate != nil {
		select {
		case <-s.gate:
		case <-ctx.Done():
			return backends.ClaimResult{}, ctx.Err()
		}
	}
	return s.Store.Claim(ctx, p)
}

func (s *countingStore) Complete(ctx context.Context, p backends.CompleteParams) (bool, error) {
	s.completes.Add(1)
	return s.Store.Complete(ctx, p)
}

func cacheFP(s string) once.Fingerprint { return once.Fingerprint(s) }
