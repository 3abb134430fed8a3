package postgres

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
	"github.com/stagedoor/once/internal/pgsql"
)

// TestWatchRandomized drives one Store's listener with random sequences
// of watches, stops, changes (complete, release, resolve, delete) on a
// few keys, and terminations of the listening connection, and checks
// after every step: a change wakes every waiter of its key that was
// watching when it was made; the listener's connection holds the lock of
// every slot a live waiter's key falls in; and, at the end, with every
// waiter but one gone, it unlocks every other slot, and with none left,
// closes. Seeds are printed on
// failure.
func TestWatchRandomized(t *testing.T) {
	pool := newPool(t, nil)
	for seed := range uint64(4) {
		t.Run("seed"+strconv.FormatUint(seed, 10), func(t *testing.T) {
			s := newTable(t, pool, Config{})
			s.listen.idle = 20 * time.Millisecond
			rng := rand.New(rand.NewPCG(seed, 0x5eed))
			scope := backendtest.Scope(t)
			ctx := context.Background()
			keys := []string{"a", "b", "c", "d", "e", "f"}
			owners := map[string]string{} // key -> owner of its pending record
			type watch struct {
				key  string
				ch   <-chan struct{}
				stop func()
			}
			var live []*watch
			claim := func(key string) {
				if owners[key] == "" {
					owners[key] = mustClaim(t, s, scope, key)
				}
			}
			for _, k := range keys {
				claim(k)
			}
			for step := range 120 {
				switch op := rng.IntN(10); {
				case op < 4:
					key := keys[rng.IntN(len(keys))]
					ch, stop, err := watchPastBusySlot(ctx, s, scope, key)
					require.NoError(t, err, "step %d", step)
					live = append(live, &watch{key, ch, stop})
				case op < 6 && len(live) > 0:
					i := rng.IntN(len(live))
					live[i].stop()
					live = append(live[:i], live[i+1:]...)
				case op < 9:
					key := keys[rng.IntN(len(keys))]
					change(t, s, scope, key, owners[key], rng.IntN(4))
					owners[key] = ""
					claim(key)
					kept := live[:0]
					for _, w := range live {
						if w.key == key {
							requireWoken(t, w.ch, "step "+strconv.Itoa(step)+": a change of "+key)
							w.stop()
							continue
						}
						kept = append(kept, w)
					}
					live = kept
				default:
					s.listen.mu.Lock()
					cur := s.listen.current
					s.listen.mu.Unlock()
					if cur == nil {
						continue
					}
					_, err := pool.Exec(ctx, "SELECT pg_terminate_backend($1)", int32(cur.pid))
					require.NoError(t, err)
					for _, w := range live {
						requireWoken(t, w.ch, "the loss of the listening connection")
						w.stop()
					}
					live = nil
				}
				// Every live waiter's slot is locked by the listener (a
				// waiter woken by a lost connection is not live any more).
				want := map[int]bool{}
				for _, w := range live {
					select {
					case <-w.ch:
					default:
						want[pgsql.Slot(scope, w.key)] = true
					}
				}
				held := heldSlots(t, pool, s)
				for slot := range want {
					require.True(t, held[slot], "step %d: slot %d of a live waiter is not locked", step, slot)
				}
			}
			// One waiter keeps the connection: every other slot is unlocked.
			_, keep, err := watchPastBusySlot(ctx, s, scope, "a")
			require.NoError(t, err)
			for _, w := range live {
				w.stop()
			}
			require.Eventually(t, func() bool {
				held := heldSlots(t, pool, s)
				return len(held) == 1 && held[pgsql.Slot(scope, "a")]
			}, wakeWithin, 10*time.Millisecond, "the slots of departed waiters stay locked")
			keep()
			require.Eventually(t, func() bool { return len(heldSlots(t, pool, s)) == 0 }, wakeWithin, 10*time.Millisecond,
				"slot locks left after every waiter left")
		})
	}
}

// change makes one of the four waking changes to key, pending for owner.
func change(t *testing.T, s *Store, scope, key, owner string, which int) {
	t.Helper()
	ctx := context.Background()
	switch which {
	case 0:
		complete(t, s, scope, key, owner)
	case 1:
		ok, err := s.Release(ctx, backends.ReleaseParams{Scope: scope, Key: key, Owner: owner})
		require.NoError(t, err)
		require.True(t, ok)
		return
	case 2:
		// A Resolve leaves a live claim: hold it first (which wakes the
		// waiters too).
		ok, err := s.Hold(ctx, backends.HoldParams{Scope: scope, Key: key, Owner: owner, For: time.Minute, Retention: time.Hour})
		require.NoError(t, err)
		require.True(t, ok)
		r, err := s.Resolve(ctx, backends.ResolveParams{Scope: scope, Key: key, Outcome: []byte("r"), Retention: time.Hour})
		require.NoError(t, err)
		require.True(t, r.Resolved)
	}
	ok, err := s.Delete(ctx, scope, key) // also clears a completed key for the next claim
	require.NoError(t, err)
	require.True(t, ok)
}

// heldSlots returns the slots of s's table locked by any session.
func heldSlots(t *testing.T, pool *pgxpool.Pool, s *Store) map[int]bool {
	t.Helper()
	space := int64(uint32(pgsql.LockSpace(s.cfg.qualifiedTable())))
	rows, err := pool.Query(context.Background(), `SELECT objid::int FROM pg_locks
		WHERE locktype = 'advisory' AND objsubid = 2 AND granted AND mode = 'ShareLock' AND classid = $1::bigint::oid`, space)
	require.NoError(t, err)
	defer rows.Close()
	held := map[int]bool{}
	for rows.Next() {
		var slot int
		require.NoError(t, rows.Scan(&slot))
		held[slot] = true
	}
	require.NoError(t, rows.Err())
	return held
}

// watchPastBusySlot is Watch, tried again when it gave up waiting for the
// key's slot lock (errSlotBusy: Watch's documented answer when the lock
// is not taken within slotWait, after which the core polls that step). On
// a loaded machine the listener's connection can take longer than
// slotWait to lock a free slot; the model checks wake-ups, not that
// timing.
func watchPastBusySlot(ctx context.Context, s *Store, scope, key string) (<-chan struct{}, func(), error) {
	for attempt := 1; ; attempt++ {
		ch, stop, err := s.Watch(ctx, scope, key)
		if err == nil || attempt == 20 || !strings.Contains(err.Error(), errSlotBusy.Error()) {
			return ch, stop, err
		}
	}
}
