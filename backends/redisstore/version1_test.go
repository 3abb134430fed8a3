package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
	"github.com/stagedoor/once/backends/redisstore"
)

// TestVersion1RecordsRefused: records an earlier redisstore wrote (layout
// version 1: 'p', 'c' or 'h' first, a server-clock lease end) are refused
// by every operation with ErrCorrupt, never read as records of this
// layout, and left as they are.
func TestVersion1RecordsRefused(t *testing.T) {
	c := singleClient(t)
	s := newStore(t, c, nil)
	ctx := context.Background()
	owner := "0123456789abcdef0123456789abcdef"
	for name, raw := range map[string]string{
		"pending":   "p\x02fp\x20" + owner + "1764547200000 1764547100000",
		"completed": "c\x02fp\x20" + owner + `{"v":1}`,
		"held":      "h\x02fp\x20" + owner + "1 2 3 7 timeoutno answer",
	} {
		t.Run(name, func(t *testing.T) {
			scope := backendtest.Scope(t)
			key := testPrefix + "{" + itoa(len(scope)) + ":" + scope + ":k}"
			require.NoError(t, c.Set(ctx, key, raw, time.Hour).Err())
			corrupt := func(err error) {
				t.Helper()
				require.ErrorIs(t, err, redisstore.ErrCorrupt)
				require.Contains(t, err.Error(), "version 1")
			}
			_, err := s.Claim(ctx, backends.ClaimParams{Scope: scope, Key: "k", Fingerprint: []byte("fp"), Owner: backendtest.Token(), Lease: time.Minute, Retention: time.Hour})
			corrupt(err)
			_, err = s.Complete(ctx, backends.CompleteParams{Scope: scope, Key: "k", Owner: owner, Outcome: []byte("v"), Retention: time.Hour})
			corrupt(err)
			_, err = s.Renew(ctx, backends.RenewParams{Scope: scope, Key: "k", Owner: owner, Lease: time.Minute})
			corrupt(err)
			_, err = s.Release(ctx, backends.ReleaseParams{Scope: scope, Key: "k", Owner: owner})
			corrupt(err)
			_, err = s.Resolve(ctx, backends.ResolveParams{Scope: scope, Key: "k", Owner: backendtest.Token(), Outcome: []byte("v"), Retention: time.Hour})
			corrupt(err)
			_, err = s.Hold(ctx, backends.HoldParams{Scope: scope, Key: "k", Owner: owner, For: time.Minute, Retention: time.Hour})
			corrupt(err)
			_, err = s.LeaseHeld(ctx, backends.LeaseHeldParams{Scope: scope, Key: "k", Owner: backendtest.Token(), Lease: time.Minute})
			corrupt(err)
			_, _, _, err = s.Get(ctx, scope, "k")
			corrupt(err)
			page := backends.ListPage{Next: ""}
			for {
				page, err = s.List(ctx, backends.ListParams{Scope: scope, Cursor: page.Next})
				if err != nil || page.Next == "" {
					break
				}
			}
			corrupt(err)
			_, err = s.Count(ctx)
			corrupt(err)
			got, err := c.Get(ctx, key).Result()
			require.NoError(t, err)
			require.Equal(t, raw, got, "nothing rewrote the record")
			deleted, err := s.Delete(ctx, scope, "k")
			require.NoError(t, err)
			require.True(t, deleted, "an operator can delete it")
		})
	}
}
