package once_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/internal/testservers"
)

// On every store: Resolve leaves a call that is running; its owner
// completes and its outcome is the one replayed.
func TestResolveLeavesALiveClaimOnEveryStore(t *testing.T) {
	for name, newStore := range testservers.Stores() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			scope := once.New(newStore(t)).Scope("s")
			started, finish := make(chan struct{}), make(chan struct{})
			type result struct {
				v   int
				err error
			}
			done := make(chan result, 1)
			go func() {
				v, err := once.Do(ctx, scope, "k", nil, func(context.Context) (int, error) {
					close(started)
					<-finish
					return 7, nil
				})
				done <- result{v, err}
			}()
			<-started
			rErr := once.Resolve(ctx, scope, "k", nil, 1, nil)
			close(finish)
			r := <-done

			var inProgress *once.InProgressError
			require.ErrorAs(t, rErr, &inProgress)
			assert.False(t, inProgress.Held)
			assert.Positive(t, inProgress.LeaseRemaining)
			require.NoError(t, r.err, "the owner keeps its claim")
			assert.Equal(t, 7, r.v)
			v, err := once.Do(ctx, scope, "k", nil, func(context.Context) (int, error) { return 0, nil })
			require.NoError(t, err)
			assert.Equal(t, 7, v, "the owner's outcome replays")
		})
	}
}
