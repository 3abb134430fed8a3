package backendtest

import (
	"context"
	"testing"
	"time"

	"github.com/stagedoor/once/backends"
)

// Elapse returns once store's clock has advanced by at least d (plus the
// resolution of the store's clock) since Elapse was called: it claims a
// marker record, in a scope of its own, with that lease, polls until the
// store lets another owner take the marker over, and releases it, so that
// the store is left as it was. A test that waits for a
// lease, a hold or a retention to pass calls it right after the write that
// started it, so that it waits by the clock that decides, however late the
// test's own goroutines run.
func Elapse(tb testing.TB, store backends.Store, d time.Duration) {
	tb.Helper()
	p := backends.ClaimParams{Scope: Scope(tb), Key: "clock", Owner: Token(), Lease: d + clockSlack, Retention: time.Hour}
	r, err := store.Claim(context.Background(), p)
	if err != nil || !r.Claimed {
		tb.Fatalf("elapse: the marker claim: %+v, %v", r, err)
	}
	p.Owner, p.Lease = Token(), time.Hour
	for deadline := time.Now().Add(waitAtMost); ; time.Sleep(pollEvery) {
		r, err := store.Claim(context.Background(), p)
		if err != nil {
			tb.Fatalf("elapse: %v", err)
		}
		if r.TookOver {
			if _, err := store.Release(context.Background(), backends.ReleaseParams{Scope: p.Scope, Key: p.Key, Owner: p.Owner}); err != nil {
				tb.Fatalf("elapse: releasing the marker: %v", err)
			}
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("elapse: a marker lease of %v never ended", d)
		}
	}
}
