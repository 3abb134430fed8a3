package backendtest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
)

// badNames are scopes and keys no record can have: NUL, invalid UTF-8, a
// control character, empty, and one byte over backends.MaxKeyLen (and
// MaxScopeLen). The core refuses them before calling a store; a store
// refuses them from a direct caller too, or its List walks would meet a
// record no cursor can name.
var badNames = []string{"k\x00", "k\xff", "k\t", "", strings.Repeat("k", backends.MaxKeyLen+1)}

func exerciseInput(t *testing.T, newStore NewStore) {
	// Every operation of the Store (and Get and Delete on an Admin, Watch
	// on a Watcher) with a bad scope or key returns an error, not a panic
	// and not a claim, and leaves no record a List walk meets.
	run(t, newStore, "RefusesNamesNoRecordCanHave", func(e *env) {
		marker := "k-" + Token() // the key of the records under a bad scope
		for _, bad := range badNames {
			for _, c := range []struct{ field, scope, key string }{
				{"key", e.scope, bad},
				{"scope", bad, marker},
			} {
				msg := fmt.Sprintf("%s %.40q", c.field, bad)
				owner := Token()
				r, err := e.store.Claim(e.ctx, backends.ClaimParams{Scope: c.scope, Key: c.key, Owner: owner, Lease: longLease, Retention: longRetention})
				require.Error(e.t, err, "Claim with "+msg)
				require.False(e.t, r.Claimed, "Claim with "+msg)
				_, err = e.store.Hold(e.ctx, backends.HoldParams{Scope: c.scope, Key: c.key, Owner: owner, For: longLease, Code: "c", Retention: longRetention})
				require.Error(e.t, err, "Hold with "+msg)
				_, err = e.store.LeaseHeld(e.ctx, backends.LeaseHeldParams{Scope: c.scope, Key: c.key, Owner: owner, Lease: longLease})
				require.Error(e.t, err, "LeaseHeld with "+msg)
				_, err = e.store.Renew(e.ctx, backends.RenewParams{Scope: c.scope, Key: c.key, Owner: owner, Lease: longLease})
				require.Error(e.t, err, "Renew with "+msg)
				_, err = e.store.Complete(e.ctx, backends.CompleteParams{Scope: c.scope, Key: c.key, Owner: owner, Outcome: []byte("v"), Retention: longRetention})
				require.Error(e.t, err, "Complete with "+msg)
				_, err = e.store.Release(e.ctx, backends.ReleaseParams{Scope: c.scope, Key: c.key, Owner: owner})
				require.Error(e.t, err, "Release with "+msg)
				rr, err := e.store.Resolve(e.ctx, backends.ResolveParams{Scope: c.scope, Key: c.key, Owner: owner, Outcome: []byte("v"), Retention: longRetention})
				require.Error(e.t, err, "Resolve with "+msg)
				require.False(e.t, rr.Resolved, "Resolve with "+msg)
				if a, ok := e.store.(backends.Admin); ok {
					_, _, found, err := a.Get(e.ctx, c.scope, c.key)
					require.Error(e.t, err, "Admin.Get with "+msg)
					require.False(e.t, found, "Admin.Get with "+msg)
					deleted, err := a.Delete(e.ctx, c.scope, c.key)
					require.Error(e.t, err, "Admin.Delete with "+msg)
					require.False(e.t, deleted, "Admin.Delete with "+msg)
				}
				if w, ok := e.store.(backends.Watcher); ok {
					_, stop, err := w.Watch(e.ctx, c.scope, c.key)
					if stop != nil {
						stop()
					}
					require.Error(e.t, err, "Watch with "+msg)
				}
			}
		}
		if _, ok := e.store.(backends.Lister); !ok {
			return
		}
		seen, _ := e.walk(backends.ListParams{Scope: e.scope})
		require.Empty(e.t, seen, "no record under a bad key")
		seen, _ = e.walk(backends.ListParams{KeyPrefix: marker})
		require.Empty(e.t, seen, "no record under a bad scope")
	})
}
