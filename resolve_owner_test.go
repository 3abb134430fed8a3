package once_test

import (
	"context"
	"encoding/base64"
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
	raw, err := base64.RawURLEncoding.DecodeString(spy.owners[0])
	require.NoError(t, err, "a token in unpadded base64url")
	assert.Len(t, raw, 16, "a 128-bit token")
	assert.NotEqual(t, spy.owners[0], spy.owners[1])
}

// pendingResolver answers every Resolve with a pending record it did not
// change, as a SQL store does when it gave up waiting for a transaction
// that holds the key uncommitted (its lock timeout).
type pendingResolver struct{ backends.Store }

func (pendingResolver) Resolve(context.Context, backends.ResolveParams) (backends.ResolveResult, error) {
	return backends.ResolveResult{Existing: backends.Record{State: backends.StatePending}}, nil
}

// A Resolve the store refused because the key is pending (held by a claim
// not yet visible, or a transaction not yet committed) reports the key in
// progress, never ErrAlreadyCompleted: nothing was completed.
func TestResolveOfAPendingAnswerIsInProgress(t *testing.T) {
	scope := once.New(pendingResolver{memory.New(nil)}).Scope("s")
	err := once.Resolve(context.Background(), scope, "k", nil, 1, nil)
	var inProgress *once.InProgressError
	require.ErrorAs(t, err, &inProgress)
	assert.False(t, inProgress.Held)
	assert.NotErrorIs(t, err, once.ErrAlreadyCompleted)
}
