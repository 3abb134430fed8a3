package memory_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/memory"
)

// TestListPageFollowsThePage: a page of List costs what the page holds,
// whatever the store's size, as backends.Lister requires. It counts the
// allocations of one page of 10 pending records (each record listed
// allocates its fingerprint's copy) in the middle of a walk, in a store
// of 1 000 records and in one of 64 000: on main a page built every
// matching record of the shards it touched, then kept 10, so the larger
// store's page allocated about 64 times as much.
func TestListPageFollowsThePage(t *testing.T) {
	allocs := func(records int) float64 {
		ctx := context.Background()
		s := memory.New(nil)
		for i := range records {
			_, err := s.Claim(ctx, backends.ClaimParams{Scope: "s", Key: "k" + strconv.Itoa(i), Fingerprint: []byte("fp"), Owner: "o", Lease: time.Hour, Retention: time.Hour})
			require.NoError(t, err)
		}
		p := backends.ListParams{Limit: 10}
		first, err := s.List(ctx, p)
		require.NoError(t, err)
		require.Len(t, first.Records, 10)
		p.Cursor = first.Next
		return testing.AllocsPerRun(20, func() {
			page, err := s.List(ctx, p)
			if err != nil || len(page.Records) != 10 {
				t.Errorf("page of %d records, %v", len(page.Records), err)
			}
		})
	}
	small, large := allocs(1_000), allocs(64_000)
	t.Logf("allocations of a page: %.0f at 1 000 records, %.0f at 64 000", small, large)
	require.LessOrEqual(t, large, small+2, "a page allocates what it holds")
}
