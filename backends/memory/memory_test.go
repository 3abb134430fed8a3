package memory_test

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
	"github.com/stagedoor/once/backends/memory"
)

func TestConformance(t *testing.T) {
	backendtest.Run(t, func(testing.TB) backends.Store { return memory.New(nil) })
}

func TestConformanceShared(t *testing.T) {
	shared := memory.New(nil)
	backendtest.Run(t, func(testing.TB) backends.Store { return shared })
}

func BenchmarkStore(b *testing.B) {
	backendtest.Benchmark(b, func(testing.TB) backends.Store { return memory.New(nil) })
}

func TestSweepRemovesExpiredRecordsAndWakesOrphanWatchers(t *testing.T) {
	now := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	s := memory.New(&memory.Config{Now: func() time.Time { return now }})
	ctx := context.Background()
	for i := range 10 {
		_, err := s.Claim(ctx, backends.ClaimParams{Scope: "s", Key: strconv.Itoa(i), Owner: "o", Lease: time.Second, Retention: time.Duration(i+1) * time.Minute})
		require.NoError(t, err)
	}
	orphan, _, err := s.Watch(ctx, "s", "never-written")
	require.NoError(t, err)
	now = now.Add(5*time.Minute + time.Second)
	n, err := s.Sweep(context.Background())
	require.NoError(t, err)
	assert.EqualValues(t, 5, n)
	assert.Equal(t, 5, s.Len())
	select {
	case <-orphan:
	default:
		t.Fatal("a watcher of an absent key must be woken by the sweep")
	}
}

func TestAmortisedSweepBoundsGrowth(t *testing.T) {
	now := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	s := memory.New(&memory.Config{Now: func() time.Time { return now }})
	ctx := context.Background()
	for i := range 100_000 {
		_, err := s.Claim(ctx, backends.ClaimParams{Scope: "s", Key: strconv.Itoa(i), Owner: "o", Lease: time.Second, Retention: time.Second})
		require.NoError(t, err)
		now = now.Add(time.Millisecond) // each record expires 1000 claims later
	}
	assert.Less(t, s.Len(), 10_000, "expired records are swept by writes without a Sweep call")
}

// A Claim that finds a completed record reports the time the record has
// left by the store's clock; a saturated retention reports a positive one.
func TestClaimReportsExpiresIn(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	s := memory.New(&memory.Config{Now: func() time.Time { return now }})
	for _, c := range []struct {
		key       string
		retention time.Duration
	}{{"minute", time.Minute}, {"forever", math.MaxInt64}} {
		res, err := s.Claim(ctx, backends.ClaimParams{Scope: "s", Key: c.key, Owner: "o", Lease: time.Minute, Retention: c.retention})
		require.NoError(t, err)
		require.True(t, res.Claimed)
		ok, err := s.Complete(ctx, backends.CompleteParams{Scope: "s", Key: c.key, Owner: "o", Outcome: []byte("v"), Retention: c.retention})
		require.NoError(t, err)
		require.True(t, ok)
	}
	now = now.Add(20 * time.Second)
	for key, want := range map[string]time.Duration{"minute": 40 * time.Second, "forever": 0} {
		res, err := s.Claim(ctx, backends.ClaimParams{Scope: "s", Key: key, Owner: "p", Lease: time.Minute, Retention: time.Minute})
		require.NoError(t, err)
		require.Equal(t, backends.StateCompleted, res.Existing.State)
		if want == 0 {
			require.Greater(t, res.Existing.ExpiresIn, 100*365*24*time.Hour, key)
			continue
		}
		require.Equal(t, want, res.Existing.ExpiresIn, key)
	}
}

func TestRefusesNamesNoRecordCanHave(t *testing.T) {
	s := memory.New(nil)
	backendtest.EachBadNameCall(context.Background(), s, "s", "k", func(c backendtest.BadNameCall) {
		msg := fmt.Sprintf("%s %s %q", c.Op, c.Field, c.Name)
		var ie *memory.InputError
		require.ErrorAs(t, c.Err, &ie, msg)
		assert.Equal(t, c.Op, ie.Op, msg)
		assert.True(t, strings.EqualFold(c.Field, ie.Field), msg)
		if c.Name != "" {
			assert.NotContains(t, c.Err.Error(), c.Name, "the error does not contain the value")
		}
	})
	require.Zero(t, s.Len(), "nothing stored")
}

func TestRefusesOwnersAndFingerprintsOutOfBounds(t *testing.T) {
	s := memory.New(nil)
	backendtest.EachBadOwnerOrFingerprintCall(context.Background(), s, "s", "k", func(c backendtest.BadParamCall) {
		msg := fmt.Sprintf("%s %s %s", c.Op, c.Value, c.Field)
		var ie *memory.InputError
		require.ErrorAs(t, c.Err, &ie, msg)
		assert.Equal(t, c.Op, ie.Op, msg)
		assert.True(t, strings.EqualFold(c.Field, ie.Field), msg)
		assert.False(t, c.Applied, msg)
	})
	require.Zero(t, s.Len(), "nothing stored")
}

// A held code or message backends.HeldProblem refuses is refused with an
// *InputError naming the field, as a bad owner is.
func TestRefusesHeldCodesAndMessagesOutOfBounds(t *testing.T) {
	s := memory.New(nil)
	backendtest.EachBadHeldCall(context.Background(), s, "s", "k", "o", func(c backendtest.BadParamCall) {
		msg := fmt.Sprintf("%s %s %s", c.Op, c.Value, c.Field)
		var ie *memory.InputError
		require.ErrorAs(t, c.Err, &ie, msg)
		assert.Equal(t, c.Op, ie.Op, msg)
		assert.True(t, strings.EqualFold(c.Field, ie.Field), msg)
		assert.False(t, c.Applied, msg)
	})
	require.Zero(t, s.Len(), "nothing stored")
}
