package postgres

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
	"github.com/stagedoor/once/internal/pgsql"
)

// BenchmarkWaiters is 1 000 WithWait callers of one key while its owner
// works for waitersHold, with the Store's Watcher ("listen") and without
// it ("poll": the same Store behind a type that hides Watch, so the core
// polls as it does for any store without one). Per operation (one owner,
// its waiters, one completion) it reports:
//
//   - wake-p50-ms, wake-p99-ms, wake-max-ms: each waiter's time from the
//     end of the owner's fn (its Complete is sent right after) to its own
//     answer;
//   - stmts/s-waiting: statements the Store sent per second while the
//     waiters waited (counted by a pgx tracer on the pool: every claim of
//     a waiter, every lease renewal of the owner);
//   - commits/s-waiting: the database's xact_commit per second over the
//     same window (pg_stat_database, which counts every session of the
//     database: other clients of the server add to it);
//   - stmts/op: the statements of the whole operation.
//
// Run: go test -run '^$' -bench Waiters -benchtime 3x ./backends/postgres/
func BenchmarkWaiters(b *testing.B) {
	for _, mode := range []string{"listen", "poll"} {
		b.Run(mode, func(b *testing.B) {
			tracer := &counter{}
			pool := newPool(b, func(cfg *pgxpool.Config) { cfg.ConnConfig.Tracer = tracer })
			s := newStore(b, pool)
			var store backends.Store = s
			if mode == "poll" {
				store = struct {
					backends.Store
					backends.Admin
				}{s, s}
			}
			scope := once.New(store).Scope(backendtest.Scope(b)).With(once.WithWait(time.Minute))
			var lat []time.Duration
			var stmtsWaiting, commitsWaiting, seconds float64
			var stmts int64
			b.ResetTimer()
			for i := range b.N {
				r := runWaiters(b, pool, tracer, scope, "k"+string(rune('a'+i%26))+randomSuffix())
				lat = append(lat, r.latencies...)
				stmtsWaiting += float64(r.stmtsWaiting)
				commitsWaiting += float64(r.commitsWaiting)
				seconds += r.window.Seconds()
				stmts += r.stmts
			}
			b.StopTimer()
			slices.Sort(lat)
			ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
			b.ReportMetric(ms(lat[len(lat)/2]), "wake-p50-ms")
			b.ReportMetric(ms(lat[len(lat)*99/100]), "wake-p99-ms")
			b.ReportMetric(ms(lat[len(lat)-1]), "wake-max-ms")
			b.ReportMetric(stmtsWaiting/seconds, "stmts/s-waiting")
			b.ReportMetric(commitsWaiting/seconds, "commits/s-waiting")
			b.ReportMetric(float64(stmts)/float64(b.N), "stmts/op")
		})
	}
}

const (
	waiters     = 1000
	waitersHold = 3 * time.Second
	// waitersSettle is left for every waiter to find the key pending
	// before the measured window opens.
	waitersSettle = time.Second
)

type waitersRun struct {
	latencies                    []time.Duration
	stmtsWaiting, commitsWaiting int64
	window                       time.Duration
	stmts                        int64
}

func runWaiters(b *testing.B, pool *pgxpool.Pool, tracer *counter, scope once.Scope, key string) waitersRun {
	ctx := context.Background()
	startStmts := tracer.n.Load()
	started, finish := make(chan struct{}), make(chan struct{})
	var done time.Time // when the owner's fn returned
	var owner sync.WaitGroup
	owner.Go(func() {
		_, err := once.Do(ctx, scope, key, nil, func(context.Context) (string, error) {
			close(started)
			<-finish
			done = time.Now()
			return "first", nil
		})
		if err != nil {
			b.Error(err)
		}
	})
	<-started
	answered := make([]time.Time, waiters)
	var wg sync.WaitGroup
	for i := range waiters {
		wg.Go(func() {
			v, err := once.Do(ctx, scope, key, nil, func(context.Context) (string, error) { return "second", nil })
			answered[i] = time.Now()
			if err != nil || v != "first" {
				b.Errorf("waiter %d: %q, %v", i, v, err)
			}
		})
	}
	time.Sleep(waitersSettle)
	commits0 := xactCommit(b, pool)
	stmts0 := tracer.n.Load()
	t0 := time.Now()
	time.Sleep(waitersHold - waitersSettle)
	r := waitersRun{stmtsWaiting: tracer.n.Load() - stmts0, window: time.Since(t0)}
	r.commitsWaiting = xactCommit(b, pool) - commits0 - 1 // this reading's own statement
	close(finish)
	owner.Wait()
	wg.Wait()
	r.stmts = tracer.n.Load() - startStmts - 2 // the two xact_commit readings
	for _, at := range answered {
		r.latencies = append(r.latencies, at.Sub(done))
	}
	return r
}

func xactCommit(b *testing.B, pool *pgxpool.Pool) int64 {
	var n int64
	if err := pool.QueryRow(context.Background(),
		"SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()").Scan(&n); err != nil {
		b.Fatal(err)
	}
	return n
}

// BenchmarkFirstExecutionWithListener is a claim and a completion of a
// fresh key, 16 at a time, with nobody waiting on the table
// ("no-listener": no completion notifies), with one waiter on another key
// ("one-waiter": only completions of that key's slot, 1 in 64, notify),
// and with waiters on keys of every slot ("all-slots": every completion
// notifies, as it would without the slot locks, and its commit takes
// PostgreSQL's global notify lock).
//
// Run: go test -run '^$' -bench FirstExecutionWithListener -cpu 16 ./backends/postgres/
func BenchmarkFirstExecutionWithListener(b *testing.B) {
	for _, mode := range []string{"no-listener", "one-waiter", "all-slots"} {
		b.Run(mode, func(b *testing.B) {
			s := newTable(b, newPool(b, nil), Config{})
			scope := backendtest.Scope(b)
			watched := map[int]bool{}
			for i := 0; mode != "no-listener" && len(watched) < pgsql.Slots; i++ {
				key := "elsewhere" + strconv.Itoa(i)
				if watched[pgsql.Slot(scope, key)] {
					continue
				}
				watched[pgsql.Slot(scope, key)] = true
				_, stop, err := s.Watch(context.Background(), scope, key)
				if err != nil {
					b.Fatal(err)
				}
				defer stop()
				if mode == "one-waiter" {
					break
				}
			}
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				for pb.Next() {
					p := claimParams(scope, randomSuffix())
					r, err := s.Claim(ctx, p)
					if err != nil || !r.Claimed {
						b.Fatal(err)
					}
					ok, err := s.Complete(ctx, backends.CompleteParams{Scope: scope, Key: p.Key, Owner: p.Owner, Outcome: []byte("v"), Retention: time.Hour})
					if err != nil || !ok {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
