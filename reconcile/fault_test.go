package reconcile_test

import (
	"context"
	"sync"
	"time"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/memory"
)

// reconcileFaults is a memory store, keeping its Lister and Admin (which
// faultStore hides), whose Resolve and LeaseHeld fail or panic as its
// hooks say: each hook, when set, runs before the call, and the call is
// not made when it returns an error, which the store returns instead. A
// panic in a hook is the store's panic.
type reconcileFaults struct {
	*memory.Store

	mu        sync.Mutex
	resolve   func(backends.ResolveParams) error
	leaseHeld func(backends.LeaseHeldParams) error
}

func newReconcileFaults() *reconcileFaults { return &reconcileFaults{Store: memory.New(nil)} }

// newReconcileFaultsAt is newReconcileFaults with the store's clock now.
func newReconcileFaultsAt(now func() time.Time) *reconcileFaults {
	return &reconcileFaults{Store: memory.New(&memory.Config{Now: now})}
}

// failResolve makes Resolve fail with err for keys (every key when none),
// or lets every Resolve through when err is nil.
func (f *reconcileFaults) failResolve(err error, keys ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resolve = nil
	if err != nil {
		match := keyMatcher(keys)
		f.resolve = func(p backends.ResolveParams) error {
			if match(p.Key) {
				return err
			}
			return nil
		}
	}
}

func (f *reconcileFaults) set(fn func(f *reconcileFaults)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func keyMatcher(keys []string) func(string) bool {
	set := map[string]bool{}
	for _, k := range keys {
		set[k] = true
	}
	return func(k string) bool { return len(set) == 0 || set[k] }
}

func (f *reconcileFaults) Resolve(ctx context.Context, p backends.ResolveParams) (backends.ResolveResult, error) {
	f.mu.Lock()
	h := f.resolve
	f.mu.Unlock()
	if h != nil {
		if err := h(p); err != nil {
			return backends.ResolveResult{}, err
		}
	}
	return f.Store.Resolve(ctx, p)
}

func (f *reconcileFaults) LeaseHeld(ctx context.Context, p backends.LeaseHeldParams) (backends.LeaseHeldResult, error) {
	f.mu.Lock()
	h := f.leaseHeld
	f.mu.Unlock()
	if h != nil {
		if err := h(p); err != nil {
			return backends.LeaseHeldResult{}, err
		}
	}
	return f.Store.LeaseHeld(ctx, p)
}
