package sqlitestore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
)

// A scope or key no record can have is refused with an *Error before any
// statement: on a closed Store too, whose every statement fails with
// backends.ErrClosed.
func TestRefusesNamesNoRecordCanHave(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, tempDB(t), nil)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	for _, bad := range []string{"", "k\x00", "k\xff", "k\x7f", strings.Repeat("k", 256)} {
		for _, c := range []struct{ field, scope, key string }{{"key", "s", bad}, {"scope", bad, "k"}} {
			ops := map[string]func() error{
				"claim": func() error {
					_, err := s.Claim(ctx, backends.ClaimParams{Scope: c.scope, Key: c.key, Owner: "o", Lease: time.Minute, Retention: time.Hour})
					return err
				},
				"renew": func() error {
					_, err := s.Renew(ctx, backends.RenewParams{Scope: c.scope, Key: c.key, Owner: "o", Lease: time.Minute})
					return err
				},
				"resolve": func() error {
					_, err := s.Resolve(ctx, backends.ResolveParams{Scope: c.scope, Key: c.key, Retention: time.Hour})
					return err
				},
				"leaseheld": func() error {
					_, err := s.LeaseHeld(ctx, backends.LeaseHeldParams{Scope: c.scope, Key: c.key, Owner: "o", Lease: time.Minute})
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
				var e *Error
				require.ErrorAs(t, err, &e, "%s %s %q", op, c.field, bad)
				assert.Equal(t, op, e.Op)
				assert.NotErrorIs(t, err, backends.ErrClosed, "refused before any statement")
				assert.Contains(t, err.Error(), "invalid input: "+c.field+" ")
				if bad != "" {
					assert.NotContains(t, err.Error(), bad, "the error does not contain the value")
				}
			}
		}
	}
}
