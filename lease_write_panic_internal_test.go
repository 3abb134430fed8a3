package once

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/memory"
)

// A store write that panics (a store wrapper's bug; Do lets it propagate,
// and net/http or Consume recover it, so the process goes on) must not
// leave a renewer that still counts as writing: once pooled, it would be
// the next claim's, whose renewals it would then skip, so that the next
// claim's lease lapses while its fn runs and a duplicate runs fn again.
// The next claim that gets the renewer back must send its renewal.
func TestRenewerPooledAfterAPanickingWriteStillRenews(t *testing.T) {
	installManualTimers(t)
	store := &renewCounter{Store: memory.New(nil)}
	p := backends.RenewParams{Scope: "s", Key: "k", Owner: "o", Lease: time.Minute}
	claimed, err := store.Claim(context.Background(), backends.ClaimParams{Scope: "s", Key: "k", Owner: "o", Lease: time.Minute, Retention: time.Hour})
	require.NoError(t, err)
	require.True(t, claimed.Claimed)
	cfg := defaultConfig()
	for range 64 { // the race detector's pool drops some Puts
		r := startRenewer(context.Background(), store, &cfg, p, time.Now(), lostFunc(func(error) {}))
		func() {
			defer func() { _ = recover() }()
			r.write(func(time.Duration) bool { panic("store Complete panicked") })
		}()
		r.stop()
		r.recycle()
		next := startRenewer(context.Background(), store, &cfg, p, time.Now(), lostFunc(func(error) {}))
		if next != r {
			next.stop()
			next.recycle()
			continue
		}
		next.renew()
		require.Equal(t, int64(1), store.renewals.Load(), "the next claim's renewer, pooled after a panicking write, sends no renewal")
		next.stop()
		return
	}
}
