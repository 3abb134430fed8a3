package sqlitestore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
)

func TestParseCursor(t *testing.T) {
	p := backends.ListParams{Scope: "s", KeyPrefix: "k"}
	codec := p.Cursors()
	for _, c := range []struct {
		state      backends.State
		scope, key string
	}{
		{state: backends.StateHeld},
		{state: backends.StatePending, scope: "s", key: "k.é"},
		{state: backends.StateHeld, scope: strings.Repeat("s", backends.MaxScopeLen), key: strings.Repeat("k", backends.MaxKeyLen)},
	} {
		state, scope, key, err := parseCursor(cursor(codec, c.state, c.scope, c.key), codec)
		require.NoError(t, err, "%+v", c)
		require.Equal(t, c.state, state)
		require.Equal(t, c.scope, scope)
		require.Equal(t, c.key, key)
	}
	// Fields this store never writes, with a valid check, and the format
	// before the shared codec.
	for _, s := range []string{
		codec.Encode("h", "", ""), codec.Encode("p", "", ""), codec.Encode("completed", "", ""),
		codec.Encode("held", "s", ""), codec.Encode("held", "s\x00", "k"), codec.Encode("held", "s", "\xff"),
		"p.73.6b", "h..",
	} {
		_, _, _, err := parseCursor(s, codec)
		require.ErrorIs(t, err, backends.ErrInvalidListParams, "%q", s)
	}
	pending := backends.ListParams{State: backends.StatePending}.Cursors()
	_, _, _, err := parseCursor(cursor(pending, backends.StateHeld, "", ""), pending)
	require.ErrorIs(t, err, backends.ErrInvalidListParams, "a pending walk's cursor does not walk the held records")
}

// List with OlderThan 0 left out the records created in the current
// microsecond (the age became 1 µs); 0 means every record, as on MySQL.
func TestListOlderThanZeroIncludesThisMicrosecond(t *testing.T) {
	clock := &fakeClock{now: time.Now()}
	s := openStore(t, tempDB(t), &Config{Now: clock.Now})
	ctx := context.Background()
	if r, err := s.Claim(ctx, backends.ClaimParams{Scope: "s", Key: "k", Owner: "a", Lease: time.Minute, Retention: time.Hour}); err != nil || !r.Claimed {
		t.Fatal(r, err)
	}
	page, err := s.List(ctx, backends.ListParams{State: backends.StatePending})
	if err != nil || len(page.Records) != 1 {
		t.Fatalf("OlderThan 0 at the claim's instant: %d records, err %v; want 1", len(page.Records), err)
	}
	page, err = s.List(ctx, backends.ListParams{State: backends.StatePending, OlderThan: time.Nanosecond})
	if err != nil || len(page.Records) != 0 {
		t.Fatalf("OlderThan 1 ns at the claim's instant: %d records, err %v; want 0", len(page.Records), err)
	}
}
