package once_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/memory"
	"github.com/stagedoor/once/internal/testservers"
)

type refuseSpy struct {
	backends.Store
	sent []bool
}

func (s *refuseSpy) Resolve(ctx context.Context, p backends.ResolveParams) (backends.ResolveResult, error) {
	s.sent = append(s.sent, p.RefuseLiveClaim)
	return s.Store.Resolve(ctx, p)
}

// RefuseLiveClaim reaches the store only when given; a nil option is
// ignored.
func TestResolveSendsRefuseLiveClaim(t *testing.T) {
	spy := &refuseSpy{Store: memory.New(nil)}
	scope := once.New(spy).Scope("s")
	ctx := context.Background()
	require.NoError(t, once.Resolve(ctx, scope, "a", nil, 1, nil))
	require.NoError(t, once.Resolve(ctx, scope, "b", nil, 1, nil, once.RefuseLiveClaim()))
	require.NoError(t, once.Resolve(ctx, scope, "c", nil, 1, nil, nil))
	assert.Equal(t, []bool{false, true, false}, spy.sent)
}

// On every store: a Resolve with RefuseLiveClaim leaves a call that is
// running; its owner completes and its outcome is the one replayed. Without
// it the Resolve takes the key and the owner loses its lease, as before.
func TestResolveRefuseLiveClaimOnEveryStore(t *testing.T) {
	for name, newStore := range testservers.Stores() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			scope := once.New(newStore(t)).Scope("s")
			running := func(key string, resolve func() error) (int, error, error) {
				started, finish := make(chan struct{}), make(chan struct{})
				type result struct {
					v   int
					err error
				}
				done := make(chan result, 1)
				go func() {
					v, err := once.Do(ctx, scope, key, nil, func(context.Context) (int, error) {
						close(started)
						<-finish
						return 7, nil
					})
					done <- result{v, err}
				}()
				<-started
				rErr := resolve()
				close(finish)
				r := <-done
				return r.v, r.err, rErr
			}

			v, doErr, rErr := running("refused", func() error {
				return once.Resolve(ctx, scope, "refused", nil, 1, nil, once.RefuseLiveClaim())
			})
			var inProgress *once.InProgressError
			require.ErrorAs(t, rErr, &inProgress)
			assert.False(t, inProgress.Held)
			assert.Positive(t, inProgress.LeaseRemaining)
			require.NoError(t, doErr, "the owner keeps its claim")
			assert.Equal(t, 7, v)
			v, err := once.Do(ctx, scope, "refused", nil, func(context.Context) (int, error) { return 0, nil })
			require.NoError(t, err)
			assert.Equal(t, 7, v, "the owner's outcome replays")

			_, doErr, rErr = running("taken", func() error {
				return once.Resolve(ctx, scope, "taken", nil, 1, nil)
			})
			require.NoError(t, rErr, "by default Resolve stores over a running claim")
			assert.ErrorIs(t, doErr, once.ErrLeaseLost)
			v, err = once.Do(ctx, scope, "taken", nil, func(context.Context) (int, error) { return 0, nil })
			require.NoError(t, err)
			assert.Equal(t, 1, v)
		})
	}
}
