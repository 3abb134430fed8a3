package once_test

import (
	"context"
	"testing"
	"time"

	"github.com/stagedoor/once/backends"
)

// awaitLeaseEnd returns once the store reports the claim on (scope, key)
// past its lease by its own clock, or the key no longer pending.
func awaitLeaseEnd(t *testing.T, store backends.Admin, scope, key string) {
	t.Helper()
	eventually(t, func() bool {
		r, err := store.Get(context.Background(), scope, key)
		if err != nil {
			t.Fatalf("awaitLeaseEnd: %v", err)
		}
		return r.State != backends.StatePending || r.LeaseRemaining <= 0
	}, "the lease on %s/%s never ended", scope, key)
}

// eventually polls cond until it holds. Its bound only keeps a broken test
// from hanging: it is no timing assertion.
func eventually(t *testing.T, cond func() bool, format string, args ...any) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf(format, args...)
		}
	}
}
