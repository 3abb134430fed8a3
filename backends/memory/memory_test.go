package memory_test

import (
	"context"
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
	assert.Equal(t, 5, s.Sweep())
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
func TestClaimReportsRetentionRemaining(t *testing.T) {
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
			require.Greater(t, res.Existing.RetentionRemaining, 100*365*24*time.Hour, key)
			continue
		}
		require.Equal(t, want, res.Existing.RetentionRemaining, key)
	}
}

func TestRefusesNamesNoRecordCanHave(t *testing.T) {
	s := memory.New(nil)
	ctx := context.Background()
	for _, bad := range []string{"", "k\x00", "k\xff", "k\x7f", strings.Repeat("k", 256)} {
		for _, c := range []struct{ field, scope, key string }{{"Key", "s", bad}, {"Scope", bad, "k"}} {
			ops := map[string]func() error{
				"claim": func() error {
					_, err := s.Claim(ctx, backends.ClaimParams{Scope: c.scope, Key: c.key, Owner: "o", Lease: time.Minute, Retention: time.Hour})
					return err
				},
				"resolve": func() error {
					_, err := s.Resolve(ctx, backends.ResolveParams{Scope: c.scope, Key: c.key, Retention: time.Hour})
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
				var ie *memory.InputError
				err := call()
				require.ErrorAs(t, err, &ie, "%s %s %q", op, c.field, bad)
				assert.Equal(t, op, ie.Op)
				assert.Equal(t, c.field, ie.Field)
				if bad != "" {
					assert.NotContains(t, err.Error(), bad, "the error does not contain the value")
				}
			}
		}
	}
	require.Zero(t, s.Len(), "nothing stored")
}
