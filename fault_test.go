package once_test

import (
	"context"
	"sync"

	"github.com/stagedoor/once/backends"
)

// faultStore wraps a real store and injects failures into chosen
// operations, to test how the core reacts to a failing store. Each hook, when
// set, runs instead of the wrapped call.
type faultStore struct {
	backends.Store

	mu       sync.Mutex
	claim    func(context.Context, backends.ClaimParams) (backends.ClaimResult, error)
	complete func(context.Context, backends.CompleteParams) (bool, error)
	renew    func(context.Context, backends.RenewParams) (bool, error)
	release  func(context.Context, backends.ReleaseParams) (bool, error)
	hold     func(context.Context, backends.HoldParams) (bool, error)
	calls    map[string]int
}

func newFaultStore(inner backends.Store) *faultStore {
	return &faultStore{Store: inner, calls: map[string]int{}}
}

func (f *faultStore) count(op string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[op]++
}

func (f *faultStore) Calls(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

func (f *faultStore) hooks() (c func(context.Context, backends.ClaimParams) (backends.ClaimResult, error),
	co func(context.Context, backends.CompleteParams) (bool, error),
	r func(context.Context, backends.RenewParams) (bool, error),
	re func(context.Context, backends.ReleaseParams) (bool, error)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.claim, f.complete, f.renew, f.release
}

func (f *faultStore) Claim(ctx context.Context, p backends.ClaimParams) (backends.ClaimResult, error) {
	f.count("claim")
	if h, _, _, _ := f.hooks(); h != nil {
		return h(ctx, p)
	}
	return f.Store.Claim(ctx, p)
}

func (f *faultStore) Complete(ctx context.Context, p backends.CompleteParams) (bool, error) {
	f.count("complete")
	if _, h, _, _ := f.hooks(); h != nil {
		return h(ctx, p)
	}
	return f.Store.Complete(ctx, p)
}

func (f *faultStore) Renew(ctx context.Context, p backends.RenewParams) (bool, error) {
	f.count("renew")
	if _, _, h, _ := f.hooks(); h != nil {
		return h(ctx, p)
	}
	return f.Store.Renew(ctx, p)
}

func (f *faultStore) Release(ctx context.Context, p backends.ReleaseParams) (bool, error) {
	f.count("release")
	if _, _, _, h := f.hooks(); h != nil {
		return h(ctx, p)
	}
	return f.Store.Release(ctx, p)
}

func (f *faultStore) Hold(ctx context.Context, p backends.HoldParams) (bool, error) {
	f.count("hold")
	f.mu.Lock()
	h := f.hold
	f.mu.Unlock()
	if h != nil {
		return h(ctx, p)
	}
	return f.Store.Hold(ctx, p)
}

func (f *faultStore) set(fn func(f *faultStore)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}
