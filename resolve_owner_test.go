package once_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/memory"
)

type resolveSpy struct {
	backends.Store
	owners []string
}

func (s *resolveSpy) Resolve(ctx context.Context, p backends.ResolveParams) (backends.ResolveResult, error) {
	s.owners = append(s.owners, p.Owner)
	return s.Store.Resolve(ctx, p)
}

// Every Resolve carries an owner token of its own (decision D), so a
// backend can recognise a driver's re-send of the same Resolve.
func TestResolveSendsAFreshOwnerPerCall(t *testing.T) {
	spy := &resolveSpy{Store: memory.New(nil)}
	scope := once.New(spy).Scope("s")
	require.NoError(t, once.Resolve(context.Background(), scope, "a", nil, 1, nil))
	require.NoError(t, once.Resolve(context.Background(), scope, "b", nil, 2, nil))
	require.Len(t, spy.owners, 2)
	assert.Len(t, spy.owners[0], 32, "a 128-bit token in hex")
	assert.NotEqual(t, spy.owners[0], spy.owners[1])
}
