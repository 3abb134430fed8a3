package redisstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/redisstore"
)

// A scope or key no record can have is refused with ErrInvalid before
// anything is sent: on a closed client too, whose every command fails.
func TestRefusesNamesNoRecordCanHave(t *testing.T) {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: singleAddr()})
	s := newStore(t, client, nil)
	require.NoError(t, client.Close())
	for _, bad := range []string{"", "k\x00", "k\xff", "k\x7f", strings.Repeat("k", 256)} {
		for _, c := range []struct{ field, scope, key string }{{"key", "s", bad}, {"scope", bad, "k"}} {
			ops := map[string]func() error{
				"claim": func() error {
					_, err := s.Claim(ctx, backends.ClaimParams{Scope: c.scope, Key: c.key, Owner: "o", Lease: time.Minute, Retention: time.Hour})
					return err
				},
				"complete": func() error {
					_, err := s.Complete(ctx, backends.CompleteParams{Scope: c.scope, Key: c.key, Owner: "o", Retention: time.Hour})
					return err
				},
				"resolve": func() error {
					_, err := s.Resolve(ctx, backends.ResolveParams{Scope: c.scope, Key: c.key, Retention: time.Hour})
					return err
				},
				"hold": func() error {
					_, err := s.Hold(ctx, backends.HoldParams{Scope: c.scope, Key: c.key, Owner: "o", For: time.Minute, Retention: time.Hour})
					return err
				},
				"get": func() error {
					_, _, _, err := s.Get(ctx, c.scope, c.key)
					return err
				},
				"delete": func() error {
					_, err := s.Delete(ctx, c.scope, c.key)
					return err
				},
				"watch": func() error {
					_, _, err := s.Watch(ctx, c.scope, c.key)
					return err
				},
			}
			for op, call := range ops {
				err := call()
				require.ErrorIs(t, err, redisstore.ErrInvalid, "%s %s %q", op, c.field, bad)
				var e *redisstore.Error
				require.ErrorAs(t, err, &e)
				assert.Equal(t, op, e.Op)
				assert.True(t, strings.HasPrefix(e.Detail, c.field+" "), "%q names the field", e.Detail)
				if bad != "" {
					assert.NotContains(t, err.Error(), bad, "the error does not contain the value")
				}
			}
		}
	}
}
