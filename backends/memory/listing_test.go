package memory

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
)

// TestWalkBesideWrites walks the store a page at a time while random
// writes change it between pages (claims, completions, holds, releases,
// deletions, expiry), and checks what List's doc promises: every listed
// record matches the filter and is live, and a record that stays pending
// or held for the whole walk (the same record: not claimed again,
// completed, released or deleted meanwhile) is listed exactly once.
func TestWalkBesideWrites(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	s := New(&Config{Now: func() time.Time { return now }})
	ctx := context.Background()
	const keys = 400
	key := func(i int) string { return "k" + strconv.Itoa(i) }
	owners := map[int]string{}
	moved := map[int]bool{} // keys given a new record, or none, during the walk
	write := func() {
		i := r.IntN(keys)
		k := key(i)
		if owners[i] == "" {
			owners[i] = "nobody"
		}
		switch r.IntN(6) {
		case 0, 1:
			owner := strconv.Itoa(r.Int())
			res, err := s.Claim(ctx, backends.ClaimParams{Scope: "s", Key: k, Owner: owner, Lease: time.Duration(1+r.IntN(50)) * time.Second, Retention: time.Minute})
			require.NoError(t, err)
			if res.Claimed {
				owners[i], moved[i] = owner, true
			}
		case 2:
			done, err := s.Complete(ctx, backends.CompleteParams{Scope: "s", Key: k, Owner: owners[i], Retention: time.Minute})
			require.NoError(t, err)
			moved[i] = moved[i] || done
		case 3:
			_, err := s.Hold(ctx, backends.HoldParams{Scope: "s", Key: k, Owner: owners[i], For: time.Minute, Retention: time.Minute})
			require.NoError(t, err)
		case 4:
			var gone bool
			var err error
			if r.IntN(2) == 0 {
				gone, err = s.Release(ctx, backends.ReleaseParams{Scope: "s", Key: k, Owner: owners[i]})
			} else {
				gone, err = s.Delete(ctx, "s", k)
			}
			require.NoError(t, err)
			moved[i] = moved[i] || gone
		case 5:
			now = now.Add(time.Duration(r.IntN(3)) * time.Second)
		}
	}
	// listedState is the state a key is listed in now, 0 when it is not.
	listedState := func(i int) backends.State {
		rec, err := s.Get(ctx, "s", key(i))
		require.NoError(t, err)
		if rec.State == backends.StateCompleted {
			return 0
		}
		return rec.State
	}
	for walk := range 200 {
		for range r.IntN(300) {
			write()
		}
		p := backends.ListParams{State: []backends.State{0, backends.StatePending, backends.StateHeld}[r.IntN(3)], Limit: 1 + r.IntN(20)}
		clear(moved)
		throughout := map[int]bool{} // keys that matched at the walk's start and every page since, never moved
		for i := range keys {
			if st := listedState(i); st != 0 && (p.State == 0 || st == p.State) {
				throughout[i] = true
			}
		}
		listed := map[string]int{}
		for pages := 0; ; pages++ {
			require.Less(t, pages, 10_000, "walk %d ends", walk)
			page, err := s.List(ctx, p)
			require.NoError(t, err)
			require.LessOrEqual(t, len(page.Records), p.Limit)
			for _, l := range page.Records {
				listed[l.Key]++
				require.Equal(t, l.Record.State, listedState(mustAtoi(t, l.Key[1:])), "listed as it is")
				require.True(t, p.State == 0 || l.Record.State == p.State, "the state filter")
				require.Positive(t, l.Record.ExpiresIn)
			}
			if page.Next == "" {
				break
			}
			p.Cursor = page.Next
			for range r.IntN(5) {
				write()
			}
			for i := range throughout {
				if st := listedState(i); moved[i] || st == 0 || p.State != 0 && st != p.State {
					delete(throughout, i)
				}
			}
		}
		for i := range throughout {
			require.Equal(t, 1, listed[key(i)], "walk %d: %s stayed listable throughout", walk, key(i))
		}
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}

// TestListingStaysBounded: places that records leave are compacted away,
// so a store through which many records pass (claimed, then completed,
// released or expired) keeps listings about the size of its live records.
func TestListingStaysBounded(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	s := New(&Config{Now: func() time.Time { return now }})
	ctx := context.Background()
	for i := range 100_000 {
		k := "k" + strconv.Itoa(i)
		_, err := s.Claim(ctx, backends.ClaimParams{Scope: "s", Key: k, Owner: "o", Lease: time.Second, Retention: time.Second})
		require.NoError(t, err)
		switch i % 4 {
		case 0:
			_, err = s.Complete(ctx, backends.CompleteParams{Scope: "s", Key: k, Owner: "o", Retention: time.Second})
		case 1:
			_, err = s.Release(ctx, backends.ReleaseParams{Scope: "s", Key: k, Owner: "o"})
		case 2:
			_, err = s.Hold(ctx, backends.HoldParams{Scope: "s", Key: k, Owner: "o", For: time.Second, Retention: time.Second})
		}
		require.NoError(t, err)
		now = now.Add(time.Millisecond) // a record expires 1000 writes later
	}
	places := 0
	for i := range s.shards {
		places += len(s.shards[i].open.places) + len(s.shards[i].completed.places)
	}
	require.Less(t, places, 2*(1000+2*64*shardCount), "places are compacted as records leave them")
}

// TestPageStopsAtItsBudget: a page examines at most pageBudget places, so
// a filter that few records match costs pages of bounded work, some of
// them empty with a Next, rather than one page that scans the store.
func TestPageStopsAtItsBudget(t *testing.T) {
	s := New(nil)
	ctx := context.Background()
	claim := func(scope, key string) {
		_, err := s.Claim(ctx, backends.ClaimParams{Scope: scope, Key: key, Owner: "o", Lease: time.Hour, Retention: time.Hour})
		require.NoError(t, err)
	}
	const others = 20 * 1024
	for i := range others {
		claim("others", strconv.Itoa(i))
	}
	claim("mine", "k")
	p := backends.ListParams{Scope: "mine", Limit: 1}
	found, pages := 0, 0
	for {
		page, err := s.List(ctx, p)
		require.NoError(t, err)
		pages++
		found += len(page.Records)
		if page.Next == "" {
			break
		}
		p.Cursor = page.Next
	}
	require.Equal(t, 1, found)
	require.GreaterOrEqual(t, pages, (others+1)/pageBudget(1), "no page examined more than its budget")
}
