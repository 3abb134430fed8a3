package redisstore

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
	"github.com/stagedoor/once/internal/testservers/serverenv"
)

func TestParseRecordKeyInvertsRecordKey(t *testing.T) {
	for _, c := range [][2]string{
		{"a:b", "c"}, {"a", "b:c"}, {"{a}", "b"}, {"{a", "}b"}, {"100%", "}"}, {"%7D", "%25"}, {"*", "[?]"},
	} {
		scope, key, ok := parseRecordKey("p:", recordKey("p:", c[0], c[1]))
		require.True(t, ok, "%q", c)
		require.Equal(t, c[0], scope)
		require.Equal(t, c[1], key)
	}
	for _, raw := range []string{"p:", "p:{", "p:{x:a:b}", "p:{9:a:b}", "p:{1:a:b", "q:{1:a:b}", "p:{1:a}b}"} {
		_, _, ok := parseRecordKey("p:", raw)
		require.False(t, ok, "%q", raw)
	}
}

func TestListCursorRoundTrip(t *testing.T) {
	codec := backends.ListParams{State: backends.StateHeld, Scope: "s"}.Cursors()
	const prefix = "once:"
	for _, c := range []listCursor{
		{},
		{addr: "127.0.0.1:7001", scan: 1<<64 - 1, count: backends.MaxListLimit, end: 1<<64 - 1, after: recordKey(prefix, "a", "\" b}")},
		{scan: 7, count: 1, after: recordKey(prefix, "s", "k")},
	} {
		got, err := parseListCursor(c.encode(codec), codec, prefix)
		require.NoError(t, err, "%+v", c)
		require.Equal(t, c, got)
	}
	start, err := parseListCursor("", codec, prefix)
	require.NoError(t, err)
	require.Equal(t, listCursor{}, start)
	k := recordKey(prefix, "s", "k")
	// Fields this store never writes, with a valid check.
	for _, f := range [][]string{
		{"a", "1", "100", "0", ""}, {"a", "1", "0", "5", ""}, {"a", "1", "0", "0", k}, {"a", "1", "10001", "0", k},
		{"a", "-1", "0", "0", ""}, {"a", "18446744073709551616", "0", "0", ""}, {"a", "01", "0", "0", ""}, {"a", "+1", "0", "0", ""},
		{"a", "1", "-100", "0", k}, {"a", "1", "100", "-1", k}, {"a", "1", "100", "07", k}, {"a", "", "0", "0", ""},
		{"a", "1", "100", "0", "not a key of this store"}, {"a", "1", "100", "0", "other:{1:s:k}"},
		{"a", "1", "100", "0", recordKey(prefix, "s", "k\x00")}, {"a", "1", "100", "0", recordKey(prefix, "\xff", "k")},
		{"a", "1", "100", "0", recordKey(prefix, "", "")}, {"a", "1", "100", "0", recordKey(prefix, "s", "")},
		{"a", "1", "100", "0"},
	} {
		_, err := parseListCursor(codec.Encode(f...), codec, prefix)
		require.ErrorIs(t, err, backends.ErrInvalidListParams, "%q", f)
	}
	// The formats before the shared codec.
	b := "30000000000000000"
	for _, s := range []string{`"a" 1 ""`, b + ` "a" 1 0 ""`, b + ` "a" 1 0 0 ""`, b + ` "a" 1 100 9 "k"`} {
		_, err := parseListCursor(s, codec, prefix)
		require.ErrorIs(t, err, backends.ErrInvalidListParams, "%q", s)
	}
}

// TestCoveredComparesReversedBits: SCAN cursors advance in the order of
// their reversed bits; 0 is the end of the keyspace.
func TestCoveredComparesReversedBits(t *testing.T) {
	// With 8 buckets SCAN visits 0 4 2 6 1 5 3 7.
	order := []uint64{4, 2, 6, 1, 5, 3, 7}
	for i, a := range order {
		for j, b := range order {
			require.Equal(t, i <= j, covered(a, b, true), "%d before %d", a, b)
		}
		require.True(t, covered(a, 0, true), "everything is before the end")
		require.False(t, covered(0, a, true), "the end is past every cursor")
		require.Equal(t, a == 2, covered(a, 2, false), "unordered: only equal cursors")
	}
	require.True(t, covered(0, 0, false))
	require.True(t, covered(6, 6, false))
	// A cursor of a larger table sorts between those of a smaller one.
	require.True(t, covered(2, 2+8, true))
	require.True(t, covered(2+8, 6, true))
}

// TestListResumesABatchWithItsCount: a page that stopped inside a SCAN
// batch reads that batch again with the COUNT it was read with, whatever
// the next page's Limit; a larger COUNT would read more buckets, whose
// keys up to the cursor's would be skipped for good.
func TestListResumesABatchWithItsCount(t *testing.T) {
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: serverenv.RedisAddr()})
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Ping(ctx).Err(); err != nil {
		if serverenv.Required() {
			t.Fatalf("redis at %s: %v", serverenv.RedisAddr(), err)
		}
		t.Skipf("redis at %s: %v", serverenv.RedisAddr(), err)
	}
	counts := &scanCounts{}
	c.AddHook(counts)
	s, err := New(ctx, c, &Config{KeyPrefix: "oncetest-listcount:", EvictionPolicyCheck: EvictionIgnore})
	require.NoError(t, err)
	scope := backendtest.Scope(t)
	p := backends.ListParams{Scope: scope, Limit: 5000}
	// A cursor as a page cut inside the batch of COUNT 123 from SCAN
	// cursor 0 returns it: that batch's end is the SCAN cursor it ended at.
	_, end, err := c.Scan(ctx, 0, s.listPattern(p), 123).Result()
	require.NoError(t, err)
	counts.reset()
	cur := listCursor{scan: 0, count: 123, end: end, after: s.key(scope, "k")}
	p.Cursor = cur.encode(p.Cursors())
	_, err = s.List(ctx, p)
	require.NoError(t, err)
	require.NotEmpty(t, counts.got)
	require.Equal(t, int64(123), counts.got[0], "the batch is read again with its own COUNT")
	// Then, if the batch changed meanwhile (other tests share the server),
	// the rest of it is read with its COUNT or halved ones (it grew past
	// its end, or stopped short of it), and every later batch has the
	// page's COUNT.
	rest := counts.got[1:]
	for len(rest) > 0 && rest[0] <= 123 {
		rest = rest[1:]
	}
	for _, n := range rest {
		require.Equal(t, int64(5000), n, "the next batches with the page's: %v", counts.got)
	}

	p.Cursor = listCursor{count: 1, after: "not a key of this store"}.encode(p.Cursors())
	_, err = s.List(ctx, p)
	var le *backends.ListParamsError
	require.ErrorAs(t, err, &le, "a cursor's key is one of this store's")
}

// scanCounts records the COUNT of every SCAN a client sends.
type scanCounts struct {
	mu  sync.Mutex
	got []int64
}

func (h *scanCounts) reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.got = nil
}

func (h *scanCounts) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *scanCounts) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *scanCounts) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); len(args) > 0 && strings.EqualFold(fmt.Sprint(args[0]), "scan") {
			for i := 1; i+1 < len(args); i++ {
				if strings.EqualFold(fmt.Sprint(args[i]), "count") {
					n, _ := args[i+1].(int64)
					h.mu.Lock()
					h.got = append(h.got, n)
					h.mu.Unlock()
				}
			}
		}
		return next(ctx, cmd)
	}
}

func TestListPatternEscapesGlobs(t *testing.T) {
	s := &Store{prefix: "once[1]*:"}
	require.Equal(t, `once\[1\]\*:{*}`, s.listPattern(listParams("")))
	require.Equal(t, `once\[1\]\*:{3:a\?b:k*}`, s.listPattern(listParamsKey("a?b", "k")))
}

func listParams(scope string) backends.ListParams { return backends.ListParams{Scope: scope} }

func listParamsKey(scope, prefix string) backends.ListParams {
	return backends.ListParams{Scope: scope, KeyPrefix: prefix}
}

// TestListBatchThatChangedBetweenPages: records of a SCAN batch that a
// page stopped inside are deleted before the next page, so that reading
// the batch again with its COUNT reaches into further buckets. The keys
// of those buckets that sort before the cursor's must still be listed:
// every record present throughout the walk is listed.
func TestListBatchThatChangedBetweenPages(t *testing.T) {
	t.Run("deleted", func(t *testing.T) { testListBatchChanged(t, false) })
	// Records added instead: the batch read again ends short of its end,
	// and the rest of it is still read with the cursor's key skipped up
	// to; the keyspace grows (and rehashes) meanwhile.
	t.Run("added", func(t *testing.T) { testListBatchChanged(t, true) })
}

// listBatchDB is the database of TestListBatchThatChangedBetweenPages, one
// no other test uses. The test needs a page to stop inside a SCAN batch:
// a batch (COUNT 100, about 100 keys) must hold more of its records than
// the page has room for, which fails in a database of many other keys (a
// shared server's database 0 with 156 000 keys gave batches of less than
// one of its records). In a database of its own the test's records are
// the keyspace, save those of the same test run concurrently elsewhere.
const listBatchDB = 13

// listBatchForeignMax is the most keys of others that listBatchDB may
// hold when the test starts: with its 1000 records, every batch then
// holds 20 of them at least on average, twice the page's 10.
const listBatchForeignMax = 4000

func testListBatchChanged(t *testing.T, add bool) {
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: serverenv.RedisAddr(), DB: listBatchDB})
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Ping(ctx).Err(); err != nil {
		if serverenv.Required() {
			t.Fatalf("redis at %s, database %d: %v", serverenv.RedisAddr(), listBatchDB, err)
		}
		t.Skipf("redis at %s, database %d: %v", serverenv.RedisAddr(), listBatchDB, err)
	}
	foreign, err := c.DBSize(ctx).Result()
	require.NoError(t, err)
	if foreign > listBatchForeignMax {
		t.Skipf("redis at %s: database %d holds %d keys of others (at most %d leave the walk a page that stops inside a SCAN batch, which this test needs)",
			serverenv.RedisAddr(), listBatchDB, foreign, listBatchForeignMax)
	}
	s, err := New(ctx, c, &Config{KeyPrefix: "oncetest-listbatch:", EvictionPolicyCheck: EvictionIgnore})
	require.NoError(t, err)
	scope := backendtest.Scope(t)
	const n = 1000
	keep := map[string]bool{}
	for i := range n {
		k := fmt.Sprintf("k%04d", i)
		_, err := s.Claim(ctx, backends.ClaimParams{Scope: scope, Key: k, Owner: backendtest.Token(), Lease: time.Hour, Retention: time.Hour})
		require.NoError(t, err)
		keep[k] = true
	}
	t.Cleanup(func() {
		for k := range keep {
			_, _ = s.Delete(context.Background(), scope, k)
		}
	})
	p := backends.ListParams{Scope: scope, Limit: 10}
	listed := map[string]bool{}
	var twice, fresh []string
	deleted, added := 0, 0
	t.Cleanup(func() {
		for _, k := range fresh {
			_, _ = s.Delete(context.Background(), scope, k)
		}
	})
	for pages := 0; ; pages++ {
		require.Less(t, pages, 10*n, "the walk ends")
		page, err := s.List(ctx, p)
		require.NoError(t, err)
		for _, r := range page.Records {
			if listed[r.Key] {
				twice = append(twice, r.Key)
			}
			listed[r.Key] = true
		}
		if page.Next == "" {
			break
		}
		cur, err := parseListCursor(page.Next, p.Cursors(), s.prefix)
		require.NoError(t, err)
		if cur.after != "" && add && added < 4*n {
			for range n / 2 {
				k := fmt.Sprintf("new%05d", added)
				_, err := s.Claim(ctx, backends.ClaimParams{Scope: scope, Key: k, Owner: backendtest.Token(), Lease: time.Hour, Retention: time.Hour})
				require.NoError(t, err)
				fresh = append(fresh, k)
				added++
			}
		}
		if cur.after != "" && !add && deleted < n/4 {
			// Delete the batch's records after the cursor's: the batch,
			// read again with its COUNT, then reaches further buckets.
			keys, _, err := c.Scan(ctx, cur.scan, s.listPattern(p), cur.count).Result()
			require.NoError(t, err)
			for _, rk := range keys {
				if rk > cur.after {
					_, k, ok := parseRecordKey(s.prefix, rk)
					require.True(t, ok)
					_, err := s.Delete(ctx, scope, k)
					require.NoError(t, err)
					delete(keep, k)
					deleted++
				}
			}
		}
		p.Cursor = page.Next
	}
	require.Positive(t, deleted+added, "the walk stopped inside a batch (database %d held %d keys of others)", listBatchDB, foreign)
	var missed []string
	for k := range keep {
		if !listed[k] {
			missed = append(missed, k)
		}
	}
	require.Empty(t, missed, "records present throughout the walk but never listed (%d deleted)", deleted)
	if !add {
		// The keyspace did not resize: the batch is read again in parts
		// that stay within it, and nothing is listed twice.
		require.Empty(t, twice, "records listed twice")
	}
}

// TestNodesOfALargeCluster: nodes returns every primary of a Cluster of
// more primaries than a buffer would hold (it read them only after
// ForEachMaster returned, which waits for every callback: a Cluster of
// more than 64 primaries hung List and Count). The Cluster's layout is
// given by ClusterSlots; nodes opens no connection.
func TestNodesOfALargeCluster(t *testing.T) {
	const primaries = 200
	cc := redis.NewClusterClient(&redis.ClusterOptions{
		ClusterSlots: func(context.Context) ([]redis.ClusterSlot, error) {
			slots := make([]redis.ClusterSlot, primaries)
			per := 16384 / primaries
			for i := range slots {
				end := (i+1)*per - 1
				if i == primaries-1 {
					end = 16383
				}
				slots[i] = redis.ClusterSlot{Start: i * per, End: end, Nodes: []redis.ClusterNode{{Addr: fmt.Sprintf("127.0.0.1:%d", 20000+i)}}}
			}
			return slots, nil
		},
	})
	t.Cleanup(func() { _ = cc.Close() })
	s := &Store{client: cc}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan []node, 1)
	go func() {
		nodes, err := s.nodes(ctx)
		if err != nil {
			t.Errorf("nodes: %v", err)
		}
		done <- nodes
	}()
	select {
	case nodes := <-done:
		require.Len(t, nodes, primaries)
		for i := 1; i < len(nodes); i++ {
			require.Less(t, nodes[i-1].addr, nodes[i].addr, "in address order, each once")
		}
	case <-ctx.Done():
		t.Fatal("nodes did not return for a Cluster of 200 primaries")
	}
}
