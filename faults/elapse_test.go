package faults

import (
	"context"
	"fmt"
	"time"

	"github.com/stagedoor/once/backends"
)

// elapse returns once the store's clock has advanced by at least d since
// elapse was called, as the conformance suite's elapse does: it claims a
// marker record with a lease of d and polls until the store lets another
// owner take the marker over. A store error (the store restarting) is
// retried: the wait starts with the first claim that succeeds. It returns
// ctx's error if ctx ends first.
func elapse(ctx context.Context, st backends.Store, d time.Duration) error {
	d = max(d, time.Millisecond)
	key := fmt.Sprintf("clock-%d", time.Now().UnixNano())
	claim := func(owner string, lease time.Duration) (backends.ClaimResult, error) {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		return st.Claim(cctx, backends.ClaimParams{Scope: "faults-clock", Key: key, Owner: owner, Lease: lease, Retention: d + time.Minute})
	}
	for {
		// A claim whose reply was lost left the marker ours: the wait
		// counts from it, after elapse was called, all the same.
		if _, err := claim("marker", d); err == nil {
			break
		}
		if err := sleepOrDone(ctx, 10*time.Millisecond); err != nil {
			return err
		}
	}
	for {
		if r, err := claim("clock", time.Minute); err == nil && r.Claimed {
			return nil
		}
		if err := sleepOrDone(ctx, 10*time.Millisecond); err != nil {
			return err
		}
	}
}

// sleepOrDone sleeps d, or returns ctx's error when ctx ends first.
func sleepOrDone(ctx context.Context, d time.Duration) error {
	sleepCtx(ctx, d)
	return ctx.Err()
}
