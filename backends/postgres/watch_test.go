package postgres

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
	"github.com/stagedoor/once/internal/pgsql"
)

const wakeWithin = 10 * time.Second

func requireWoken(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(wakeWithin):
		require.FailNow(t, what+" did not wake the watcher")
	}
}

func requireNotWoken(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
		require.FailNow(t, what+" woke the watcher")
	case <-time.After(100 * time.Millisecond):
	}
}

func mustClaim(t *testing.T, s *Store, scope, key string) string {
	t.Helper()
	p := claimParams(scope, key)
	r, err := s.Claim(context.Background(), p)
	require.NoError(t, err)
	require.True(t, r.Claimed)
	return p.Owner
}

func complete(t *testing.T, s backends.Store, scope, key, owner string) {
	t.Helper()
	ok, err := s.Complete(context.Background(), backends.CompleteParams{Scope: scope, Key: key, Owner: owner, Outcome: []byte("v"), Retention: time.Hour})
	require.NoError(t, err)
	require.True(t, ok)
}

// listenRaw listens for s's notifications on a connection of the test's
// own, taking the slot locks of a listener first when withLocks.
func listenRaw(t *testing.T, s *Store, withLocks bool) *pgx.Conn {
	t.Helper()
	conn := newConn(t)
	if withLocks {
		all := make([]int32, pgsql.Slots)
		for i := range all {
			all[i] = int32(i)
		}
		_, err := conn.Exec(context.Background(), s.listen.lock, all)
		require.NoError(t, err)
	}
	_, err := conn.Exec(context.Background(), s.listen.listen)
	require.NoError(t, err)
	return conn
}

// TestNotificationPayloadIsTheKeyHash listens on the table's channel from
// a connection of its own and checks what each waking statement sends:
// the channel of the table, and the payload the Go side computes for the
// key, for keys whose bytes a careless hash would confuse.
func TestNotificationPayloadIsTheKeyHash(t *testing.T) {
	pool := newPool(t, nil)
	s := newTable(t, pool, Config{})
	conn := listenRaw(t, s, true)
	channel := pgsql.Channel(s.cfg.qualifiedTable())
	ctx := context.Background()
	next := func() *string {
		wctx, cancel := context.WithTimeout(ctx, wakeWithin)
		defer cancel()
		n, err := conn.WaitForNotification(wctx)
		require.NoError(t, err)
		require.Equal(t, channel, n.Channel)
		return &n.Payload
	}
	for _, k := range [][2]string{{"s", "k"}, {"ab", "c"}, {"a", "bc"}, {"ünï", "кл\u00a0ю 🔑"}, {"s", "with'quote\\and\"more"}} {
		scope, key := k[0], k[1]
		want := pgsql.Payload(scope, key)

		owner := mustClaim(t, s, scope, key)
		complete(t, s, scope, key, owner)
		require.Equal(t, want, *next(), "complete of %q/%q", scope, key)

		ok, err := s.Delete(ctx, scope, key)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, want, *next(), "delete")

		owner = mustClaim(t, s, scope, key)
		ok, err = s.Release(ctx, backends.ReleaseParams{Scope: scope, Key: key, Owner: owner})
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, want, *next(), "release")

		owner = mustClaim(t, s, scope, key)
		ok, err = s.Checkpoint(ctx, backends.CheckpointParams{Scope: scope, Key: key, Owner: owner, Steps: []byte("s")})
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = s.Release(ctx, backends.ReleaseParams{Scope: scope, Key: key, Owner: owner})
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, want, *next(), "release of a record with steps, kept")
		_, err = s.Delete(ctx, scope, key)
		require.NoError(t, err)
		require.Equal(t, want, *next(), "delete")

		res, err := s.Resolve(ctx, backends.ResolveParams{Scope: scope, Key: key, Outcome: []byte("r"), Retention: time.Hour})
		require.NoError(t, err)
		require.True(t, res.Resolved)
		require.Equal(t, want, *next(), "resolve of an absent key")
		_, err = s.Delete(ctx, scope, key)
		require.NoError(t, err)
		require.Equal(t, want, *next(), "delete")

		owner = mustClaim(t, s, scope, key)
		ok, err = s.Hold(ctx, backends.HoldParams{Scope: scope, Key: key, Owner: owner, For: time.Minute, Code: "c", Retention: time.Hour})
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, want, *next(), "hold")
		res, err = s.Resolve(ctx, backends.ResolveParams{Scope: scope, Key: key, Outcome: []byte("r"), Retention: time.Hour})
		require.NoError(t, err)
		require.True(t, res.Resolved)
		require.Equal(t, want, *next(), "resolve of a held key")
	}

	// Statements that change nothing send nothing: a claim, a replay, a
	// fenced write by a stranger, a re-sent hold, a resolve of a completed
	// key; nor does a checkpoint, which changes no answer a waiter gets.
	scope := backendtest.Scope(t)
	holder := mustClaim(t, s, scope, "held")
	hold := func(owner string) bool {
		ok, err := s.Hold(ctx, backends.HoldParams{Scope: scope, Key: "held", Owner: owner, For: time.Minute, Code: "c", Retention: time.Hour})
		require.NoError(t, err)
		return ok
	}
	require.True(t, hold(holder))
	require.Equal(t, pgsql.Payload(scope, "held"), *next(), "hold")
	require.True(t, hold(holder), "a re-sent hold reports true")
	require.False(t, hold("stranger"))
	owner := mustClaim(t, s, scope, "quiet")
	_, err := s.Claim(ctx, claimParams(scope, "quiet"))
	require.NoError(t, err)
	ok, err := s.Complete(ctx, backends.CompleteParams{Scope: scope, Key: "quiet", Owner: "stranger", Outcome: []byte("v"), Retention: time.Hour})
	require.NoError(t, err)
	require.False(t, ok)
	ok, err = s.Release(ctx, backends.ReleaseParams{Scope: scope, Key: "quiet", Owner: "stranger"})
	require.NoError(t, err)
	require.False(t, ok)
	_, err = s.Renew(ctx, backends.RenewParams{Scope: scope, Key: "quiet", Owner: owner, Lease: time.Minute})
	require.NoError(t, err)
	ok, err = s.Checkpoint(ctx, backends.CheckpointParams{Scope: scope, Key: "quiet", Owner: owner, Steps: []byte("s")})
	require.NoError(t, err)
	require.True(t, ok)
	wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	_, err = conn.WaitForNotification(wctx)
	require.ErrorIs(t, err, context.DeadlineExceeded, "a statement that woke nobody's record notified")
}

// TestNoNotificationWithoutListener: a session that LISTENs without the
// slot locks receives nothing — the writes notify only when a listener
// holds them — and receives the completion once a listener exists.
func TestNoNotificationWithoutListener(t *testing.T) {
	pool := newPool(t, nil)
	s := newTable(t, pool, Config{})
	bare := listenRaw(t, s, false)
	scope := backendtest.Scope(t)
	ctx := context.Background()
	owner := mustClaim(t, s, scope, "k")
	complete(t, s, scope, "k", owner)
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err := bare.WaitForNotification(wctx)
	require.ErrorIs(t, err, context.DeadlineExceeded, "notified with no listener holding the slot locks")

	ch, stop, err := s.Watch(ctx, scope, "k2")
	require.NoError(t, err)
	defer stop()
	owner = mustClaim(t, s, scope, "k2")
	complete(t, s, scope, "k2", owner)
	requireWoken(t, ch, "a completion with a listener")
	n, err := bare.WaitForNotification(ctx)
	require.NoError(t, err)
	require.Equal(t, pgsql.Payload(scope, "k2"), n.Payload)
}

// TestListenerWaitsForUncommittedWriter: a listener that starts while a
// transaction holds a completion of its key's slot (made when nobody
// listened, so it will not notify) is ready only after that commit: the
// change is then before Watch returned, never a missed one after it. A
// writer that stays uncommitted longer than slotWait makes Watch give up
// (the core polls that step) without holding up waiters of other slots.
func TestListenerWaitsForUncommittedWriter(t *testing.T) {
	pool := newPool(t, nil)
	s := newTable(t, pool, Config{})
	scope := backendtest.Scope(t)
	ctx := context.Background()
	holdCompletion := func(key string) pgx.Tx {
		owner := mustClaim(t, s, scope, key)
		tx, err := pool.Begin(ctx)
		require.NoError(t, err)
		complete(t, s.InTx(tx), scope, key, owner)
		return tx
	}

	tx := holdCompletion("k")
	type result struct {
		at  time.Time
		err error
	}
	watched := make(chan result, 1)
	go func() {
		_, stop, err := s.Watch(ctx, scope, "k")
		if err == nil {
			stop()
		}
		watched <- result{time.Now(), err}
	}()
	time.Sleep(slotWait / 3)
	committed := time.Now()
	require.NoError(t, tx.Commit(ctx))
	r := <-watched
	require.NoError(t, r.err)
	require.True(t, r.at.After(committed), "Watch returned before the uncommitted writer of its slot committed")

	tx = holdCompletion("k2")
	defer func() { _ = tx.Rollback(ctx) }()
	other := "o"
	for pgsql.Slot(scope, other) == pgsql.Slot(scope, "k2") {
		other += "o"
	}
	start := time.Now()
	_, _, err := s.Watch(ctx, scope, "k2")
	var e *Error
	require.ErrorAs(t, err, &e)
	require.ErrorContains(t, err, errSlotBusy.Error())
	require.Less(t, time.Since(start), wakeWithin)
	owner := mustClaim(t, s, scope, other)
	ch, stop, err := s.Watch(ctx, scope, other)
	require.NoError(t, err, "a busy slot holds up another slot's waiter")
	defer stop()
	complete(t, s, scope, other, owner)
	requireWoken(t, ch, "a completion in another slot")
}

// listeners counts the server's sessions holding slot locks of s's table,
// and the slots they hold.
func listeners(t *testing.T, pool *pgxpool.Pool, s *Store) (sessions, slots int) {
	t.Helper()
	space := int64(uint32(pgsql.LockSpace(s.cfg.qualifiedTable())))
	require.NoError(t, pool.QueryRow(context.Background(),
		`SELECT count(DISTINCT pid), count(DISTINCT objid) FROM pg_locks
		WHERE locktype = 'advisory' AND objsubid = 2 AND granted AND classid = $1::bigint::oid`, space).Scan(&sessions, &slots))
	return sessions, slots
}

// TestWatchSharesOneConnection: any number of waiters, on one key or many,
// share one listening connection, taken out of the pool; it is closed after
// the idle delay once the last waiter left, and the pool's Close never
// waits for it.
func TestWatchSharesOneConnection(t *testing.T) {
	pool := newPool(t, nil)
	s := newTable(t, pool, Config{})
	s.listen.idle = 50 * time.Millisecond
	scope := backendtest.Scope(t)
	ctx := context.Background()
	owner := mustClaim(t, s, scope, "k")
	var stops []func()
	var chans []<-chan struct{}
	for i := range 200 {
		key := "k"
		if i%2 == 1 {
			key = "other"
		}
		ch, stop, err := s.Watch(ctx, scope, key)
		require.NoError(t, err)
		stops = append(stops, stop)
		chans = append(chans, ch)
	}
	sessions, slots := listeners(t, pool, s)
	require.Equal(t, 1, sessions, "one listening connection for every waiter")
	wantSlots := 2
	if pgsql.Slot(scope, "k") == pgsql.Slot(scope, "other") {
		wantSlots = 1
	}
	require.Equal(t, wantSlots, slots, "the listener locks the slots of the watched keys only")
	require.EqualValues(t, 0, pool.Stat().AcquiredConns(), "the listening connection is not the pool's")
	complete(t, s, scope, "k", owner)
	for i, ch := range chans {
		if i%2 == 0 {
			requireWoken(t, ch, "the completion of k")
		}
	}
	requireNotWoken(t, chans[1], "the completion of another key")
	for _, stop := range stops {
		stop()
		stop()
	}
	require.Eventually(t, func() bool { n, _ := listeners(t, pool, s); return n == 0 }, wakeWithin, 10*time.Millisecond,
		"the listening connection is closed once idle")

	// A new waiter after that takes a connection again and is woken.
	owner = mustClaim(t, s, scope, "again")
	ch, stop, err := s.Watch(ctx, scope, "again")
	require.NoError(t, err)
	defer stop()
	complete(t, s, scope, "again", owner)
	requireWoken(t, ch, "a completion after the idle release")
}

// TestWatchSurvivesATerminatedConnection: the server ends the listening
// connection; every waiter is woken (it re-checks), and the next Watch
// listens on a fresh connection that the next completion wakes.
func TestWatchSurvivesATerminatedConnection(t *testing.T) {
	pool := newPool(t, nil)
	s := newTable(t, pool, Config{})
	scope := backendtest.Scope(t)
	ctx := context.Background()
	owner := mustClaim(t, s, scope, "k")
	a, stopA, err := s.Watch(ctx, scope, "k")
	require.NoError(t, err)
	defer stopA()
	b, stopB, err := s.Watch(ctx, scope, "other")
	require.NoError(t, err)
	defer stopB()
	s.listen.mu.Lock()
	pid := s.listen.current.pid
	s.listen.mu.Unlock()
	require.NotZero(t, pid)

	var terminated bool
	require.NoError(t, pool.QueryRow(ctx, "SELECT pg_terminate_backend($1)", int32(pid)).Scan(&terminated))
	require.True(t, terminated)
	requireWoken(t, a, "the loss of the listening connection")
	requireWoken(t, b, "the loss of the listening connection")

	c, stopC, err := s.Watch(ctx, scope, "k")
	require.NoError(t, err)
	defer stopC()
	s.listen.mu.Lock()
	require.NotEqual(t, pid, s.listen.current.pid)
	s.listen.mu.Unlock()
	complete(t, s, scope, "k", owner)
	requireWoken(t, c, "a completion after the reconnect")
}

// TestHoldWakesWatchers: a Hold changes the record (pending to held), so
// it wakes the key's watchers, as on the Redis and SQLite stores
// (backends.Watcher allows no missed change after Watch returned).
func TestHoldWakesWatchers(t *testing.T) {
	pool := newPool(t, nil)
	s := newStore(t, pool)
	ctx := context.Background()
	scope := backendtest.Scope(t)
	owner := mustClaim(t, s, scope, "k")
	ch, stop, err := s.Watch(ctx, scope, "k")
	require.NoError(t, err)
	defer stop()
	ok, err := s.Hold(ctx, backends.HoldParams{Scope: scope, Key: "k", Owner: owner, For: time.Minute, Code: "c", Message: "m", Retention: time.Hour})
	require.NoError(t, err)
	require.True(t, ok)
	requireWoken(t, ch, "a hold")
}

// TestWatchWakesAtCommit: a completion made in the caller's transaction
// wakes the waiters when it commits, not before, and never if it rolls
// back.
func TestWatchWakesAtCommit(t *testing.T) {
	pool := newPool(t, nil)
	s := newTable(t, pool, Config{})
	scope := backendtest.Scope(t)
	ctx := context.Background()
	for _, commit := range []bool{false, true} {
		owner := mustClaim(t, s, scope, "k")
		ch, stop, err := s.Watch(ctx, scope, "k")
		require.NoError(t, err)
		tx, err := pool.Begin(ctx)
		require.NoError(t, err)
		complete(t, s.InTx(tx), scope, "k", owner)
		requireNotWoken(t, ch, "an uncommitted completion")
		if !commit {
			require.NoError(t, tx.Rollback(ctx))
			requireNotWoken(t, ch, "a rolled back completion")
			ok, err := s.Release(ctx, backends.ReleaseParams{Scope: scope, Key: "k", Owner: owner})
			require.NoError(t, err)
			require.True(t, ok)
		} else {
			require.NoError(t, tx.Commit(ctx))
		}
		requireWoken(t, ch, "the commit")
		stop()
	}
}

// TestWatchContextAndInput: Watch refuses bad keys before any I/O and
// honours its context while the connection is being made.
func TestWatchContextAndInput(t *testing.T) {
	s := newTable(t, newPool(t, nil), Config{})
	_, _, err := s.Watch(context.Background(), "", "k")
	var e *Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, "watch", e.Op)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err = s.Watch(ctx, "s", "k")
	require.ErrorIs(t, err, context.Canceled)
}

// TestWatchWithoutAPool: a Store over a *pgx.Conn, or with
// SingleConnection, reports ErrWatchUnsupported at once, and the core's
// WithWait still returns the owner's outcome by polling.
func TestWatchWithoutAPool(t *testing.T) {
	conn := newConn(t)
	s, err := New(conn, &Config{Schema: testSchema})
	require.NoError(t, err)
	_, _, err = s.Watch(context.Background(), "s", "k")
	require.ErrorIs(t, err, ErrWatchUnsupported)
	single, err := New(newPool(t, nil), &Config{Schema: testSchema, SingleConnection: true})
	require.NoError(t, err)
	_, _, err = single.Watch(context.Background(), "s", "k")
	require.ErrorIs(t, err, ErrWatchUnsupported)

	scope := once.New(s).Scope(backendtest.Scope(t))
	started, release := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		_, _ = once.Do(context.Background(), scope, "k", nil, func(context.Context) (string, error) {
			close(started)
			<-release
			return "first", nil
		})
	})
	<-started
	got := make(chan string, 1)
	wg.Go(func() {
		v, err := once.Do(context.Background(), scope.With(once.WithWait(wakeWithin)), "k", nil, func(context.Context) (string, error) {
			return "second", nil
		})
		if err != nil {
			got <- err.Error()
			return
		}
		got <- v
	})
	time.Sleep(50 * time.Millisecond)
	close(release)
	wg.Wait()
	require.Equal(t, "first", <-got)
}

var (
	_ acquirer = (*pgxpool.Pool)(nil)
	_ DB       = (*pgx.Conn)(nil)
)

// TestNotifyOnlyForWatchedSlots: with a waiter on one key, a completion of
// a key in another slot sends nothing, one of the watched key does; once
// that key's waiters are woken, its slot is unlocked while another key's
// stays locked.
func TestNotifyOnlyForWatchedSlots(t *testing.T) {
	pool := newPool(t, nil)
	s := newTable(t, pool, Config{})
	bare := listenRaw(t, s, false)
	scope := backendtest.Scope(t)
	ctx := context.Background()
	keyIn := func(want bool, slot int) string {
		for i := 0; ; i++ {
			k := "k" + strconv.Itoa(i)
			if (pgsql.Slot(scope, k) == slot) == want {
				return k
			}
		}
	}
	watched := "watched"
	other := keyIn(false, pgsql.Slot(scope, watched))
	third := keyIn(false, pgsql.Slot(scope, watched))
	for third == other || pgsql.Slot(scope, third) == pgsql.Slot(scope, other) {
		third += "x"
	}
	ch, stop, err := s.Watch(ctx, scope, watched)
	require.NoError(t, err)
	defer stop()
	_, stopThird, err := s.Watch(ctx, scope, third)
	require.NoError(t, err)
	defer stopThird()

	owner := mustClaim(t, s, scope, other)
	complete(t, s, scope, other, owner)
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err = bare.WaitForNotification(wctx)
	require.ErrorIs(t, err, context.DeadlineExceeded, "a completion in an unwatched slot notified")

	owner = mustClaim(t, s, scope, watched)
	complete(t, s, scope, watched, owner)
	requireWoken(t, ch, "the watched key's completion")
	n, err := bare.WaitForNotification(ctx)
	require.NoError(t, err)
	require.Equal(t, pgsql.Payload(scope, watched), n.Payload)
	require.Eventually(t, func() bool { _, slots := listeners(t, pool, s); return slots == 1 }, wakeWithin, 10*time.Millisecond,
		"the woken key's slot is unlocked, the other waiter's kept")
}

// TestWatchRightAfterTheConnectionDied: a Watch made before the listener
// noticed that the server ended its connection is not refused: it is made
// again on a fresh connection, and woken by the next change.
func TestWatchRightAfterTheConnectionDied(t *testing.T) {
	pool := newPool(t, nil)
	s := newTable(t, pool, Config{})
	scope := backendtest.Scope(t)
	ctx := context.Background()
	for i := range 10 {
		key := "k" + strconv.Itoa(i)
		_, stop, err := s.Watch(ctx, scope, "warm")
		require.NoError(t, err)
		s.listen.mu.Lock()
		pid := s.listen.current.pid
		s.listen.mu.Unlock()
		_, err = pool.Exec(ctx, "SELECT pg_terminate_backend($1)", int32(pid))
		require.NoError(t, err)
		owner := mustClaim(t, s, scope, key)
		ch, stopKey, err := s.Watch(ctx, scope, key)
		require.NoError(t, err, "round %d", i)
		complete(t, s, scope, key, owner)
		requireWoken(t, ch, "a completion after the connection died")
		stop()
		stopKey()
	}
}

// TestWatchWaitsForASlowLockTry: a slot lock whose try has not answered yet
// (a slow or loaded server) is not a busy slot. Watch waits for the try,
// within its context, and gives up with errSlotBusy only slotWait after a
// try found the lock held by a writer. It gave up slotWait after it asked,
// so on a loaded machine a free slot could come back as busy (a CI failure
// of TestCloseWhileIdle).
func TestWatchWaitsForASlowLockTry(t *testing.T) {
	pool := newPool(t, nil)
	s := newTable(t, pool, Config{})
	// Every try of the slot locks takes 3 slotWaits to answer.
	delay := strconv.FormatFloat((3 * slotWait).Seconds(), 'f', 3, 64)
	s.listen.lock = "SELECT l.s FROM (" + s.listen.lock + ") l, (SELECT pg_sleep(" + delay + ")) d"
	ctx, cancel := context.WithTimeout(context.Background(), 20*slotWait)
	defer cancel()
	start := time.Now()
	scope := backendtest.Scope(t)
	_, stop, err := s.Watch(ctx, scope, "k")
	require.NoError(t, err, "a slot whose lock try was slow, not refused, gave up")
	stop()
	require.GreaterOrEqual(t, time.Since(start), 3*slotWait, "Watch returned before its slot's lock was held")

	// A context that ends before the slow try answers ends Watch.
	other := "other"
	for pgsql.Slot(scope, other) == pgsql.Slot(scope, "k") {
		other += "x"
	}
	short, cancelShort := context.WithTimeout(context.Background(), slotWait/2)
	defer cancelShort()
	_, _, err = s.Watch(short, scope, other)
	require.ErrorIs(t, err, context.DeadlineExceeded)
}
