package faults

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/memory"
	"github.com/stagedoor/once/internal/testservers"
)

// stalledRenewStore blocks the first Renew it is sent until release is
// closed, whatever the Renew's context says, as a driver that ignores its
// context on a stalled connection does (or a store wrapper that ignores
// it). blocked is closed once that Renew blocks.
type stalledRenewStore struct {
	backends.Store
	once             sync.Once
	blocked, release chan struct{}
}

func (s *stalledRenewStore) Renew(ctx context.Context, p backends.RenewParams) (bool, error) {
	first := false
	s.once.Do(func() { first = true })
	if first {
		close(s.blocked)
		<-s.release
		ctx = context.WithoutCancel(ctx)
	}
	return s.Store.Renew(ctx, p)
}

// TestStalledRenewalNeverHoldsTheOutcomeBack, on every store: fn returns
// while a renewal is stalled in a Renew that ignores its context. The
// write that settles the claim (a Complete, a Hold, a Release) waited for
// that renewal, so nothing was written; the lease lapsed, a duplicate took
// the key over and ran fn again, and the first Do stayed blocked until the
// renewal returned (issue 26). Now the write abandons the renewal: the
// duplicate, waiting for the key, gets the stored outcome (or the held
// key, or a fresh claim of the released key), and the first Do returns
// while the renewal is still stalled.
func TestStalledRenewalNeverHoldsTheOutcomeBack(t *testing.T) {
	const lease = 1500 * time.Millisecond // renewed at a third of it; the duplicate waits past its end
	cases := []struct {
		name string
		fn   func() (string, error)
		// check checks the duplicate's answer.
		check func(t *testing.T, v string, err error)
	}{
		{"complete", func() (string, error) { return "first", nil }, func(t *testing.T, v string, err error) {
			if err != nil || v != "first" {
				t.Errorf("duplicate got %q, %v; want the stored %q", v, err, "first")
			}
		}},
		{"hold", func() (string, error) { return "", once.Hold(errors.New("timeout after the request left")) }, func(t *testing.T, _ string, err error) {
			var ip *once.InProgressError
			if !errors.As(err, &ip) || !ip.Held {
				t.Errorf("duplicate got %v; want the key held", err)
			}
		}},
		{"release", func() (string, error) { return "", errors.New("retryable") }, func(t *testing.T, v string, err error) {
			if err != nil || v != "second" {
				t.Errorf("duplicate got %q, %v; want the released key claimed afresh", v, err)
			}
		}},
	}
	for _, backend := range []string{"memory", "postgres", "redis", "mysql", "sqlite"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			var store backends.Store = memory.New(nil)
			if backend != "memory" {
				st, err := testSpec(t, backend, "faults_stall_").open(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(st.close)
				store = st.store
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					ctx := context.Background()
					scope := "stall-" + testservers.Suffix()
					stalled := &stalledRenewStore{Store: store, blocked: make(chan struct{}), release: make(chan struct{})}
					var runs atomic.Int32
					type result struct {
						out once.Outcome[string]
						err error
					}
					first := make(chan result, 1)
					go func() {
						k := once.New(stalled, once.WithLease(lease), once.WithHoldFor(once.HoldUntilResolved))
						out, err := once.DoOutcome(ctx, k.Scope(scope), "k", nil, func(context.Context) (string, error) {
							runs.Add(1)
							<-stalled.blocked // fn returns while the renewal is stalled
							return c.fn()
						})
						first <- result{out, err}
					}()
					<-stalled.blocked

					var tookOver atomic.Bool
					dup := once.New(store, once.WithLease(lease), once.WithWait(2*lease), once.WithObserver(func(_ context.Context, e once.Event) {
						if e.Kind == once.EventClaimed && e.TookOver {
							tookOver.Store(true)
						}
					}))
					v, err := once.Do(ctx, dup.Scope(scope), "k", nil, func(context.Context) (string, error) {
						runs.Add(1)
						return "second", nil
					})
					if tookOver.Load() {
						close(stalled.release) // the first Do waits for the renewal
						r := <-first
						t.Fatalf("the duplicate took the lapsed lease over (fn ran %d times; duplicate got %q, %v; first got %+v, %v)", runs.Load(), v, err, r.out, r.err)
					}
					c.check(t, v, err)
					r := <-first // the renewal is still stalled: release is closed below
					close(stalled.release)
					wantRuns := int32(1)
					if c.name == "release" {
						wantRuns = 2
					}
					if runs.Load() != wantRuns {
						t.Errorf("fn ran %d times, want %d", runs.Load(), wantRuns)
					}
					if c.name == "complete" && (r.err != nil || r.out.Status != once.Recorded) {
						t.Errorf("first Do: %+v, %v; want its outcome recorded", r.out, r.err)
					}
				})
			}
		})
	}
}
