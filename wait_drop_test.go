package once_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/postgres"
	"github.com/stagedoor/once/backends/redisstore"
	"github.com/stagedoor/once/internal/pgsql"
	"github.com/stagedoor/once/internal/testservers"
)

// waitersSurviveADrop runs an owner for 1 s and 4 waiters on store; while
// they wait, drop kills the store's listening connection (it reports
// whether it found it, retrying until the waiters' watch exists). Every
// waiter still gets the owner's outcome, well before the owner's lease
// ends: the store's own recovery or, for a notification lost meanwhile,
// the core's fallback poll.
func waitersSurviveADrop(t *testing.T, store backends.Store, drop func() bool) {
	scope := once.New(store, once.WithWait(time.Minute)).Scope("drop-" + testservers.Suffix())
	start := time.Now()
	dropped := make(chan bool, 1)
	go func() {
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
			if drop() {
				dropped <- true
				return
			}
		}
		dropped <- false
	}()
	runOwnerAndWaiters(t, scope, 4, time.Second)
	require.True(t, <-dropped, "the listening connection was found and killed")
	require.Less(t, time.Since(start), defaultLease*2/3, "the waiters waited for the lease's end")
}

// The PostgreSQL listener's backend is terminated while waiters wait.
func TestWaitersSurvivePostgresListenerTermination(t *testing.T) {
	pool := testservers.Pool(t)
	table := "once_t_" + testservers.Suffix()
	cfg := &postgres.Config{Table: table}
	ctx := context.Background()
	s, err := postgres.New(pool, cfg)
	require.NoError(t, err)
	require.NoError(t, s.Migrate(ctx))
	t.Cleanup(func() {
		for _, tb := range []string{table, table + "_migrations"} {
			_, _ = pool.Exec(context.Background(), "DROP TABLE IF EXISTS "+pgx.Identifier{"public", tb}.Sanitize())
		}
	})
	// The listener's last statement is its LISTEN or a slot lock of this
	// table: nobody else's connection matches.
	qualified := pgx.Identifier{"public", table}.Sanitize()
	listen := strings.ReplaceAll(pgsql.Listen, "{channel}", pgsql.Channel(qualified))
	lock := strings.ReplaceAll(pgsql.LockSlots, "{lockspace}", pgsql.LockSpaceLiteral(qualified))
	waitersSurviveADrop(t, s, func() bool {
		var n int
		err := pool.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE pid <> pg_backend_pid() AND query IN ($1, $2)`, listen, lock).Scan(&n)
		require.NoError(t, err)
		return n > 0
	})
}

// The Redis store's subscriber connection is killed (CLIENT KILL) while
// waiters wait. The store's client has a name of its own, so only its
// connection is killed.
func TestWaitersSurviveRedisSubscriberKill(t *testing.T) {
	admin := testservers.RedisClient(t)
	name := "once-drop-" + testservers.Suffix()
	c := redis.NewClient(&redis.Options{Addr: testservers.RedisAddr(), ClientName: name})
	t.Cleanup(func() { _ = c.Close() })
	prefix := "once-t-" + testservers.Suffix() + ":"
	s, err := redisstore.New(context.Background(), c, &redisstore.Config{KeyPrefix: prefix, EvictionPolicyCheck: redisstore.EvictionIgnore})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx := context.Background()
		iter := admin.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			_ = admin.Del(ctx, iter.Val()).Err()
		}
	})
	waitersSurviveADrop(t, s, func() bool {
		ctx := context.Background()
		list, err := admin.ClientList(ctx).Result()
		require.NoError(t, err)
		killed := false
		for line := range strings.SplitSeq(list, "\n") {
			f := clientFields(line)
			if f["name"] == name && f["sub"] != "" && f["sub"] != "0" {
				require.NoError(t, admin.Do(ctx, "CLIENT", "KILL", "ID", f["id"]).Err())
				killed = true
			}
		}
		return killed
	})
}

// clientFields parses a CLIENT LIST line: key=value pairs.
func clientFields(line string) map[string]string {
	f := make(map[string]string)
	for kv := range strings.FieldsSeq(line) {
		if k, v, ok := strings.Cut(kv, "="); ok {
			f[k] = v
		}
	}
	return f
}

// defaultLease is the lease of a Keeper made without WithLease.
const defaultLease = 30 * time.Second
