package harness

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/localcache"
)

// countingStore counts every call to the wrapped store: the library's
// store round trips. (A PostgreSQL Claim that loses a race with a
// concurrent commit re-runs its statement inside one call; the benchmark's
// keys never race, so calls and statements agree here.)
type countingStore struct {
	s backends.Store
	n *atomic.Int64
}

func (c countingStore) Claim(ctx context.Context, p backends.ClaimParams) (backends.ClaimResult, error) {
	c.n.Add(1)
	return c.s.Claim(ctx, p)
}

func (c countingStore) Complete(ctx context.Context, p backends.CompleteParams) (bool, error) {
	c.n.Add(1)
	return c.s.Complete(ctx, p)
}

func (c countingStore) Renew(ctx context.Context, p backends.RenewParams) (bool, error) {
	c.n.Add(1)
	return c.s.Renew(ctx, p)
}

func (c countingStore) Release(ctx context.Context, p backends.ReleaseParams) (bool, error) {
	c.n.Add(1)
	return c.s.Release(ctx, p)
}

func (c countingStore) Checkpoint(ctx context.Context, p backends.CheckpointParams) (bool, error) {
	c.n.Add(1)
	return c.s.Checkpoint(ctx, p)
}

func (c countingStore) Resolve(ctx context.Context, p backends.ResolveParams) (backends.ResolveResult, error) {
	c.n.Add(1)
	return c.s.Resolve(ctx, p)
}

func (c countingStore) Hold(ctx context.Context, p backends.HoldParams) (bool, error) {
	c.n.Add(1)
	return c.s.Hold(ctx, p)
}

func (c countingStore) LeaseHeld(ctx context.Context, p backends.LeaseHeldParams) (backends.LeaseHeldResult, error) {
	c.n.Add(1)
	return c.s.LeaseHeld(ctx, p)
}

// LibraryTarget measures once.Do over store, in scope: a first execution
// of a fresh key, a replay and a mismatch on a completed hot key, and a
// duplicate of a key held by a live claim. A non-nil cache puts a local
// cache (package localcache) in front of the store, above the count of
// its round trips.
func LibraryTarget(ctx context.Context, store backends.Store, scope string, cache *localcache.Config) (*Target, error) {
	t := &Target{}
	var counted backends.Store = countingStore{s: store, n: &t.Trips}
	if cache != nil {
		var err error
		if counted, err = localcache.New(counted, cache); err != nil {
			return nil, err
		}
	}
	k := once.New(counted, once.WithLease(Lease), once.WithRetention(Retention))
	sc := k.Scope(scope)
	if _, err := once.Do(ctx, sc, HotKey, FpA, Charge); err != nil {
		return nil, fmt.Errorf("seed replay key: %w", err)
	}
	r, err := store.Claim(ctx, backends.ClaimParams{Scope: scope, Key: PendingKey, Fingerprint: FpA, Owner: Token(), Lease: HoldLease, Retention: Retention})
	if err != nil || !r.Claimed {
		return nil, fmt.Errorf("seed in-progress key: %v %+v", err, r)
	}
	t.First = func(ctx context.Context, key string) error {
		out, err := once.DoOutcome(ctx, sc, key, FpA, Charge)
		if err != nil || out.Status != once.Recorded {
			return fmt.Errorf("first execution: %v %+v", err, out)
		}
		return nil
	}
	t.Replay = func(ctx context.Context, key string) error {
		out, err := once.DoOutcome(ctx, sc, key, FpA, Charge)
		if err != nil || out.Status != once.Replayed || out.Value != ThePayment {
			return fmt.Errorf("replay: %v %+v", err, out)
		}
		return nil
	}
	var keys KeySeq
	t.Ops[PathFirst] = func(ctx context.Context) error { return t.First(ctx, keys.Next("")) }
	t.Ops[PathReplay] = func(ctx context.Context) error { return t.Replay(ctx, HotKey) }
	t.Ops[PathInProgress] = func(ctx context.Context) error {
		_, err := once.Do(ctx, sc, PendingKey, FpA, Charge)
		if _, ok := err.(*once.InProgressError); !ok {
			return fmt.Errorf("in progress: %v", err)
		}
		return nil
	}
	t.Ops[PathMismatch] = func(ctx context.Context) error {
		_, err := once.Do(ctx, sc, HotKey, FpB, Charge)
		if !errors.Is(err, once.ErrKeyReused) {
			return fmt.Errorf("mismatch: %v", err)
		}
		return nil
	}
	return t, nil
}
