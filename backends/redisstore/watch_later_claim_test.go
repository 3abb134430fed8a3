package redisstore_test

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
	"github.com/stagedoor/once/backends/redisstore"
)

// firstPublish subscribes a plain Pub/Sub client to the record's channel,
// runs act, then publishes a sentinel itself: messages on one channel
// arrive in order, so the first payload is what act published, or the
// sentinel when act published nothing. No timing is involved.
func firstPublish(t *testing.T, f *stepsFixture, key string, act func()) string {
	t.Helper()
	ctx := t.Context()
	channel, _ := f.keys(key)
	ps := f.c.Subscribe(ctx, channel)
	defer ps.Close()
	_, err := ps.Receive(ctx) // the subscription's confirmation
	require.NoError(t, err)
	act()
	require.NoError(t, f.c.Publish(ctx, channel, "sentinel").Err())
	m, err := ps.ReceiveMessage(ctx)
	require.NoError(t, err)
	return m.Payload
}

// claimAndComplete claims key for a new owner and completes it.
func claimAndComplete(t *testing.T, f *stepsFixture, key string) {
	t.Helper()
	owner := backendtest.Token()
	require.True(t, f.claim(key, "fp", owner, time.Minute).Claimed)
	ok, err := f.s.Complete(t.Context(), backends.CompleteParams{Scope: f.scope, Key: key, Owner: owner, Outcome: []byte("v"), Retention: time.Hour})
	require.NoError(t, err)
	require.True(t, ok)
}

// TestWatchSeesCompletionOfClaimAfterWatch: Watch returned on a key with
// no pending record; a claim of the key made after Watch returned is
// completed, and the completion publishes (backends.Watcher: no change made
// after Watch returned is missed). The waiter keeps one watch open across
// records (wait.go), so the wake-up must not depend on the record watched.
func TestWatchSeesCompletionOfClaimAfterWatch(t *testing.T) {
	f := newStepsFixture(t)
	ctx := t.Context()
	_, stop, err := f.s.Watch(ctx, f.scope, "k")
	require.NoError(t, err)
	defer stop()
	got := firstPublish(t, f, "k", func() { claimAndComplete(t, f, "k") })
	require.Equal(t, "c", got, "the completion of a claim made after Watch returned published nothing")
}

// TestWatchSeesCompletionAfterWatchedRecordExpired: the record watched
// expires (TTL expiry publishes nothing, nor does an eviction), another
// caller claims the key and completes it: the completion publishes, so the
// waiter still subscribed wakes.
func TestWatchSeesCompletionAfterWatchedRecordExpired(t *testing.T) {
	f := newStepsFixture(t)
	ctx := t.Context()
	record, _ := f.keys("k")
	dead := backendtest.Token()
	r, err := f.s.Claim(ctx, backends.ClaimParams{Scope: f.scope, Key: "k", Fingerprint: []byte("fp"), Owner: dead, Lease: 50 * time.Millisecond, Retention: 50 * time.Millisecond})
	require.NoError(t, err)
	require.True(t, r.Claimed)
	_, stop, err := f.s.Watch(ctx, f.scope, "k")
	require.NoError(t, err)
	defer stop()
	if f.c.Exists(ctx, record).Val() == 0 {
		t.Skip("the record expired before Watch returned")
	}
	for f.c.Exists(ctx, record).Val() == 1 {
		backendtest.Elapse(t, f.s, time.Millisecond)
	}
	got := firstPublish(t, f, "k", func() { claimAndComplete(t, f, "k") })
	require.Equal(t, "c", got, "the completion of the record that replaced an expired watched one published nothing")
}

// replacingStore drives TestWaiterWakesOnCompletionOfALaterClaim: the
// waiter's first Claim finds the key pending (claimed by a dead owner just
// before); the owner releases it just before the waiter's Watch subscribes,
// and another caller claims the key just after Watch returned. It records
// whether the waiter's watch had fired when the waiter claimed for the
// third time (after its re-check with the watch open found the other
// caller's claim pending).
type replacingStore struct {
	*redisstore.Store
	t        *testing.T
	claims   atomic.Int64
	returned atomic.Int64            // claims that returned
	other    func(scope, key string) // claims the key, after Watch returned
	watch    <-chan struct{}
	wokeByCh atomic.Bool
}

func (s *replacingStore) Claim(ctx context.Context, p backends.ClaimParams) (backends.ClaimResult, error) {
	n := s.claims.Add(1)
	if n == 1 {
		_, err := s.Store.Claim(ctx, backends.ClaimParams{Scope: p.Scope, Key: p.Key, Owner: "dead-owner", Lease: time.Minute, Retention: time.Hour})
		require.NoError(s.t, err)
	}
	if n == 3 { // the first claim after the re-check: the watch fired, or the poll ended
		select {
		case <-s.watch:
			s.wokeByCh.Store(true)
		default:
		}
	}
	r, err := s.Store.Claim(ctx, p)
	s.returned.Add(1)
	return r, err
}

func (s *replacingStore) Watch(ctx context.Context, scope, key string) (<-chan struct{}, func(), error) {
	ok, err := s.Store.Release(ctx, backends.ReleaseParams{Scope: scope, Key: key, Owner: "dead-owner"})
	require.NoError(s.t, err)
	require.True(s.t, ok)
	ch, stop, err := s.Store.Watch(ctx, scope, key)
	s.watch = ch
	s.other(scope, key)
	return ch, stop, err
}

// TestWaiterWakesOnCompletionOfALaterClaim: once.Do with WithWait, on
// Redis. The waiter's watch is open when another caller claims the key and
// completes it: that completion wakes the waiter, whose next claim finds
// its watch fired, rather than its fallback poll (waitWatchPoll).
func TestWaiterWakesOnCompletionOfALaterClaim(t *testing.T) {
	c := singleClient(t)
	s := &replacingStore{Store: newStore(t, c, nil), t: t}
	ctx := t.Context()
	started, release, otherDone := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	plain := once.New(s.Store).Scope(backendtest.Scope(t))
	s.other = func(_, key string) {
		go func() {
			_, err := once.Do(ctx, plain, "k", nil, func(context.Context) (int, error) {
				close(started)
				<-release
				return 7, nil
			})
			otherDone <- err
		}()
		<-started
	}
	waiting := once.New(s, once.WithWait(time.Minute)).Scope(plain.Name())
	got := make(chan int, 1)
	go func() {
		v, err := once.Do(ctx, waiting, "k", nil, func(context.Context) (int, error) {
			return 0, errors.New("the waiter ran fn")
		})
		require.NoError(t, err)
		got <- v
	}()
	for s.returned.Load() < 2 { // the re-check with the watch open
		backendtest.Elapse(t, s.Store, time.Millisecond)
	}
	close(release)
	require.NoError(t, <-otherDone)
	require.Equal(t, 7, <-got)
	require.True(t, s.wokeByCh.Load(), "the waiter claimed again without its watch having fired: it slept through the completion until its poll")
}

// TestClusterWatchSeesCompletionOfClaimAfterWatch: as
// TestWatchSeesCompletionOfClaimAfterWatch, on a Cluster, where the
// completion would SPUBLISH in the record's slot.
func TestClusterWatchSeesCompletionOfClaimAfterWatch(t *testing.T) {
	c := clusterClient(t)
	s, scope := newStore(t, c, nil), backendtest.Scope(t)
	ctx := t.Context()
	_, stop, err := s.Watch(ctx, scope, "k")
	require.NoError(t, err)
	defer stop()
	channel := testPrefix + "{" + strconv.Itoa(len(scope)) + ":" + scope + ":k}"
	ps := c.SSubscribe(ctx, channel)
	defer ps.Close()
	_, err = ps.Receive(ctx)
	require.NoError(t, err)
	owner := backendtest.Token()
	r, err := s.Claim(ctx, backends.ClaimParams{Scope: scope, Key: "k", Owner: owner, Lease: time.Minute, Retention: time.Hour})
	require.NoError(t, err)
	require.True(t, r.Claimed)
	ok, err := s.Complete(ctx, backends.CompleteParams{Scope: scope, Key: "k", Owner: owner, Outcome: []byte("v"), Retention: time.Hour})
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, c.SPublish(ctx, channel, "sentinel").Err())
	m, err := ps.ReceiveMessage(ctx)
	require.NoError(t, err)
	require.Equal(t, "c", m.Payload, "the completion of a claim made after Watch returned did not SPUBLISH")
}

// TestLeftoverCheckpointsExpireWithTheCompletion: checkpoints left behind
// by an eviction of their record alone (emulated by a DEL of the record
// key) meet a new intent claimed by the plain SET NX; its completion gives
// them the completed record's expiry, so they die with it and the takeover
// of a later intent is never handed them.
func TestLeftoverCheckpointsExpireWithTheCompletion(t *testing.T) {
	f := newStepsFixture(t)
	ctx := t.Context()
	record, steps := f.keys("k")
	first := backendtest.Token()
	require.True(t, f.claim("k", "fp", first, time.Minute).Claimed)
	require.True(t, f.checkpoint("k", first, "first intent's steps"))
	require.NoError(t, f.c.Del(ctx, record).Err()) // evicted, its checkpoints left

	second := backendtest.Token()
	r, err := f.s.Claim(ctx, backends.ClaimParams{Scope: f.scope, Key: "k", Owner: second, Lease: time.Minute, Retention: 100 * time.Millisecond})
	require.NoError(t, err)
	require.True(t, r.Claimed)
	ok, err := f.s.Complete(ctx, backends.CompleteParams{Scope: f.scope, Key: "k", Owner: second, Outcome: []byte("v"), Retention: 100 * time.Millisecond})
	require.NoError(t, err)
	require.True(t, ok)
	rt, err := f.c.PTTL(ctx, record).Result()
	require.NoError(t, err)
	st, err := f.c.PTTL(ctx, steps).Result()
	require.NoError(t, err)
	t.Logf("completed record's PTTL %v, leftover checkpoints' PTTL %v", rt, st)

	for f.c.Exists(ctx, record).Val() == 1 { // the completed record's retention ends
		backendtest.Elapse(t, f.s, 10*time.Millisecond)
	}
	third := backendtest.Token()
	r, err = f.s.Claim(ctx, backends.ClaimParams{Scope: f.scope, Key: "k", Owner: third, Lease: time.Millisecond, Retention: time.Minute})
	require.NoError(t, err)
	require.True(t, r.Claimed)
	backendtest.Elapse(t, f.s, 2*time.Millisecond) // the third claim's owner died
	c := f.claim("k", "", backendtest.Token(), time.Minute)
	require.True(t, c.Claimed)
	require.Nil(t, c.Steps, "a takeover of the third intent got the first intent's checkpoints (took over: %v)", c.TookOver)
	require.LessOrEqual(t, st, rt, "the leftover checkpoints outlive the completed record")
}
