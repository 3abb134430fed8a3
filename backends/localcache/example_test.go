package localcache_test

import (
	"context"
	"fmt"
	"time"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/localcache"
	"github.com/stagedoor/once/backends/memory"
)

// claimCounter counts the claims that reach the store it wraps.
type claimCounter struct {
	backends.Store
	claims int
}

func (s *claimCounter) Claim(ctx context.Context, p backends.ClaimParams) (backends.ClaimResult, error) {
	s.claims++
	return s.Store.Claim(ctx, p)
}

// A client retries one request in a loop. With a local cache in front of
// the store, the replays of the completed key are answered from this
// process's memory: only the first call reaches the store.
func ExampleNew() {
	ctx := context.Background()
	store := &claimCounter{Store: memory.New(nil)}
	cached, err := localcache.New(store, &localcache.Config{MaxEntries: 10_000, TTL: 10 * time.Second})
	if err != nil {
		panic(err)
	}
	scope := once.New(cached).Scope("buyer-42")
	fp := once.Fingerprint("sha256-of-the-request")
	charge := func(ctx context.Context) (string, error) { return "ch_1", nil }

	for range 100 {
		if _, err := once.Do(ctx, scope, "order-1042", fp, charge); err != nil {
			panic(err)
		}
	}
	// The fingerprint is checked as on a store's answer: another request is refused.
	_, err = once.Do(ctx, scope, "order-1042", once.Fingerprint("another-request"), charge)
	fmt.Println("another request:", err)
	fmt.Println("claims sent to the store for 101 calls:", store.claims)
	// Output:
	// another request: once: idempotency key reused with a different request
	// claims sent to the store for 101 calls: 1
}
