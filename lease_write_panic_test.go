package once_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/memory"
)

// panickyComplete is a store wrapper whose Complete panics (a bug of the
// wrapper, or of a driver).
type panickyComplete struct{ backends.Store }

func (panickyComplete) Complete(context.Context, backends.CompleteParams) (bool, error) {
	panic("store Complete panicked")
}

// renewals counts the renewals a store receives.
type renewals struct {
	backends.Store
	n atomic.Int64
}

func (s *renewals) Renew(ctx context.Context, p backends.RenewParams) (bool, error) {
	s.n.Add(1)
	return s.Store.Renew(ctx, p)
}

// After a Do whose store's Complete panicked (the panic propagates out of
// Do; net/http and Consume recover it and the process goes on), later
// calls of any Keeper still renew their leases: a call whose fn outlives
// its lease keeps the key, and a duplicate never runs fn beside it. Each
// round ends when the long call's store sees a renewal (it held) or when
// a duplicate ran fn (it did not).
func TestAPanickingCompleteLeavesLaterCallsRenewing(t *testing.T) {
	ctx := t.Context()
	broken := once.New(panickyComplete{memory.New(nil)}).Scope("broken")
	store := &renewals{Store: memory.New(nil)}
	// The first renewal, a third of a lease in, must leave before the
	// watchdog's deadline, a fifth of a lease before the lease ends: the
	// lease leaves a late timer on a loaded machine room to meet it.
	healthy := once.New(store, once.WithLease(panicLease)).Scope("healthy")
	for round := range 20 {
		func() {
			defer func() { _ = recover() }()
			_, _ = once.Do(ctx, broken, "k", nil, func(context.Context) (int, error) { return 1, nil })
		}()
		key := "k" + string(rune('a'+round))
		var runs atomic.Int64
		renewedBefore := store.n.Load()
		_, err := once.Do(ctx, healthy, key, nil, func(context.Context) (int, error) {
			runs.Add(1)
			for store.n.Load() == renewedBefore {
				_, dupErr := once.Do(ctx, healthy, key, nil, func(context.Context) (int, error) { runs.Add(1); return 2, nil })
				if !errors.Is(dupErr, once.ErrInProgress) {
					return 0, nil // the duplicate took the key over and ran fn
				}
				time.Sleep(5 * time.Millisecond) // polls the duplicate, bounded by the lease either way
			}
			return 1, nil
		})
		_ = err
		require.Equal(t, int64(1), runs.Load(), "round %d: a call's lease was never renewed after a panicking Complete, and a duplicate ran fn", round)
	}
}
