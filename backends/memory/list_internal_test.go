package memory

import (
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
)

func TestParseCursor(t *testing.T) {
	codec := backends.ListParams{State: backends.StatePending, Scope: "s", KeyPrefix: "k"}.Cursors()
	for _, c := range []cursor{
		{},
		{shard: shardCount - 1},
		{shard: 3, seq: 17},
		{shard: 0, seq: math.MaxUint64},
	} {
		got, err := parseCursor(c.encode(codec), codec)
		require.NoError(t, err, "%+v", c)
		require.Equal(t, c, got)
	}
	// Fields a store of this version never writes, with a valid check:
	// refused, never used.
	for _, f := range [][]string{
		{"32", "0"}, {"-1", "0"}, {"01", "0"}, {"x", "0"}, {"", "0"},
		{"1", ""}, {"1", "-1"}, {"1", "01"}, {"1", "18446744073709551616"}, {"1", "s"},
	} {
		_, err := parseCursor(codec.Encode(f...), codec)
		require.ErrorIs(t, err, backends.ErrInvalidListParams, "%q", f)
	}
	_, err := parseCursor(codec.Encode("1", "2", "3"), codec)
	require.ErrorIs(t, err, backends.ErrInvalidListParams, "three fields")
	for _, s := range []string{"0", "31", "3.7361.6b", backends.ListParams{}.Cursors().Encode("1", "0")} {
		_, err := parseCursor(s, codec)
		require.ErrorIs(t, err, backends.ErrInvalidListParams, "%q", s)
	}
	start, err := parseCursor("", codec)
	require.NoError(t, err)
	require.Equal(t, cursor{}, start)
}

// TestCompletedListingIsKeptFromItsFirstList: a store never asked for its
// completed records keeps no place for them (a completion costs nothing
// more); the first List of completed records starts the listing of each
// shard it reaches, and records completed afterwards are listed too.
func TestCompletedListingIsKeptFromItsFirstList(t *testing.T) {
	s := New(nil)
	ctx := t.Context()
	complete := func(key string) {
		t.Helper()
		_, err := s.Claim(ctx, backends.ClaimParams{Scope: "s", Key: key, Owner: "o", Lease: time.Hour, Retention: time.Hour})
		require.NoError(t, err)
		ok, err := s.Complete(ctx, backends.CompleteParams{Scope: "s", Key: key, Owner: "o", Outcome: []byte("v"), Retention: time.Hour})
		require.NoError(t, err)
		require.True(t, ok)
	}
	listed := func() []string {
		t.Helper()
		var keys []string
		p := backends.ListParams{State: backends.StateCompleted}
		for {
			page, err := s.List(ctx, p)
			require.NoError(t, err)
			for _, r := range page.Records {
				keys = append(keys, r.Key)
			}
			if page.Next == "" {
				return keys
			}
			p.Cursor = page.Next
		}
	}
	for i := range 100 {
		complete("before-" + strconv.Itoa(i))
	}
	for i := range s.shards {
		require.Empty(t, s.shards[i].completed.places)
	}
	require.Len(t, listed(), 100)
	for i := range 100 {
		complete("after-" + strconv.Itoa(i))
	}
	require.Len(t, listed(), 200)
}
