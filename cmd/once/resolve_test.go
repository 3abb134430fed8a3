package main

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/redisstore"
)

// TestResolveUsage: resolve's flags are checked before any store is
// contacted (the address is never dialled).
func TestResolveUsage(t *testing.T) {
	rd := []string{"--redis", "127.0.0.1:1", "resolve", "s", "k"}
	with := func(args ...string) []string { return append(append([]string{}, rd...), args...) }
	for _, c := range []struct {
		args []string
		want string
	}{
		{with("--value", "1", "--retention", "1ms"), "--retention 1ms is under 1m0s"},
		{with("--value", "1", "--retention", "59s"), "give --yes"},
		{with("--status", "100"), "--status must be 200 to 599"},
		{with("--status", "199"), "--status must be 200 to 599"},
		{with("--status", "600"), "--status must be 200 to 599"},
		{with("--status", "999"), "--status must be 200 to 599"},
		{with("--status", "201", "--header", "X-Request-Id: 1"), "--header X-Request-Id is not one oncehttp stores"},
		{with("--status", "201", "--header", "Set-Cookie: a=b"), "Location, Content-Type"},
		{with("--status", "204", "--body", "x"), "a 204 response has no body"},
		{with("--status", "304", "--body", "x"), "a 304 response has no body"},
		{with("--error", "x", "--data", "{}"), "--data goes with --error and --code"},
		{with("--value", "1", "--data", "{}"), "--data goes with --error and --code"},
		{with("--error", "x", "--code", "c", "--data", "{"), "--data is not valid JSON"},
	} {
		r := runCLI(t, c.args...)
		assert.Equal(t, exitUsage, r.code, "%q\n%s", c.args, r)
		assert.Contains(t, r.stderr, c.want, "%q", c.args)
		assert.Empty(t, r.stdout, "%q", c.args)
	}
}

type cardDeclined struct {
	Reason string `json:"reason"`
}

func (c *cardDeclined) Error() string { return "card declined" }

// resolveGuards: resolve refuses a pending key whose owner's lease is
// live, and a retention under a minute without --yes; it says
// what it stored and for how long; --data stores a registered error
// type's fields, which a replay returns as that type.
func resolveGuards(t *testing.T, store backends.Store, flags func(...string) []string) {
	ctx := context.Background()
	r, err := store.Claim(ctx, backends.ClaimParams{Scope: "g", Key: "live", Owner: "owner", Fingerprint: testFP, Lease: time.Hour, Retention: time.Hour})
	require.NoError(t, err)
	require.True(t, r.Claimed)
	res := runCLI(t, flags("resolve", "g", "live", "--value", `{"id":1}`)...)
	assert.Equal(t, exitUsage, res.code, "%s", res)
	assert.Contains(t, res.stderr, "its owner's lease is live")
	assert.Equal(t, "pending", getJSON(t, flags(), "g", "live").State, "nothing stored")
	res = runCLI(t, flags("resolve", "g", "live", "--value", `{"id":1}`, "--yes")...)
	assert.Equal(t, exitUsage, res.code, "--yes does not take a live claim: %s", res)
	assert.Equal(t, "pending", getJSON(t, flags(), "g", "live").State, "nothing stored with --yes either")

	// A claim taken after resolve started (here: just before its store
	// call, which any read of resolve's own came before) is refused too,
	// by the store in the same step as the write: the owner keeps its
	// claim and completes it.
	resolveHook = func() {
		r, err := store.Claim(ctx, backends.ClaimParams{Scope: "g", Key: "raced", Owner: "racer", Lease: time.Hour, Retention: time.Hour})
		require.NoError(t, err)
		require.True(t, r.Claimed)
	}
	res = runCLI(t, flags("resolve", "g", "raced", "--value", `{"id":1}`)...)
	resolveHook = nil
	assert.Equal(t, exitUsage, res.code, "%s", res)
	assert.Contains(t, res.stderr, "its owner's lease is live")
	applied, err := store.Complete(ctx, backends.CompleteParams{Scope: "g", Key: "raced", Owner: "racer", Outcome: []byte(`{"id":2}`), Retention: time.Hour})
	require.NoError(t, err)
	assert.True(t, applied, "the racing owner keeps its claim")

	// A lapsed lease: nobody is running; no --yes needed.
	r, err = store.Claim(ctx, backends.ClaimParams{Scope: "g", Key: "lapsed", Owner: "owner", Lease: time.Millisecond, Retention: time.Hour})
	require.NoError(t, err)
	require.True(t, r.Claimed)
	require.Eventually(t, func() bool {
		v := getJSON(t, flags(), "g", "lapsed")
		return v.LeaseRemainingMS != nil && *v.LeaseRemainingMS <= 0
	}, 10*time.Second, 10*time.Millisecond)
	out := mustRun(t, flags("resolve", "g", "lapsed", "--error", "refunded")...)
	assert.Contains(t, out, "kept for 24h0m0s")

	// Retention: the success message and --json say what was stored and
	// for how long; a short one needs --yes.
	var v resolveView
	require.NoError(t, json.Unmarshal([]byte(mustRun(t, flags("--json", "resolve", "g", "short", "--value", "1", "--retention", "2m")...)), &v))
	assert.Equal(t, resolveView{Scope: "g", Key: "short", Resolved: true, Stored: "value", RetentionMS: 120_000}, v)
	assert.Contains(t, mustRun(t, flags("resolve", "g", "tiny", "--value", "1", "--retention", "50ms", "--yes")...), "kept for 50ms")

	// --data: the registered error type comes back on a replay.
	out = mustRun(t, flags("resolve", "g", "declined", "--error", "card declined", "--code", "card_declined", "--data", `{"reason":"insufficient_funds"}`)...)
	assert.Contains(t, out, "a final error (code card_declined) with data")
	// A code is echoed quoted when it holds a control character, as
	// stored text is in list and get: it can forge no line.
	out = mustRun(t, flags("resolve", "g", "forged-code", "--error", "declined", "--code", "x\nresolved: stored a JSON value")...)
	assert.Contains(t, out, `(code "x\nresolved: stored a JSON value")`)
	assert.NotContains(t, strings.TrimSpace(out), "\n", "one line: %q", out)
	scope := once.New(store, once.RegisterError[*cardDeclined]("card_declined")).Scope("g")
	_, err = once.Do(ctx, scope, "declined", nil, func(context.Context) (int, error) {
		t.Error("a resolved key never runs fn")
		return 0, nil
	})
	var cd *cardDeclined
	require.ErrorAs(t, err, &cd)
	assert.Equal(t, "insufficient_funds", cd.Reason)
	assert.Equal(t, "card declined", err.Error())
	assert.Contains(t, mustRun(t, flags("get", "g", "declined")...), `"reason": "insufficient_funds"`)
}

func TestPostgresResolveGuards(t *testing.T) {
	p := newPG(t)
	resolveGuards(t, migrated(t, p), p.flags)
}

func TestRedisResolveGuards(t *testing.T) {
	for name, cluster := range map[string]bool{"single": false, "cluster": true} {
		t.Run(name, func(t *testing.T) {
			r := newRedis(t, cluster)
			store, err := redisstore.New(context.Background(), r.client, &redisstore.Config{
				KeyPrefix: r.prefix, EvictionPolicyCheck: redisstore.EvictionIgnore,
			})
			require.NoError(t, err)
			resolveGuards(t, store, r.flags)
		})
	}
}

// TestPostgresResolveLockedByTransaction: a resolve of a key an
// uncommitted once.DoTx transaction holds waits for the store's lock timeout
// and says so, not that a reconciler is asking.
func TestPostgresResolveLockedByTransaction(t *testing.T) {
	p := newPG(t)
	s := migrated(t, p)
	ctx := context.Background()
	scope := once.New(s).Scope("tx")
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := once.DoTx(ctx, scope, "k", nil, s.BeginTx, func(context.Context, pgx.Tx) (int, error) {
			close(started)
			<-release
			return 1, nil
		})
		done <- err
	}()
	<-started
	// With --yes too: the store's refusal looks like a live claim's,
	// and resolve tells them apart (the uncommitted claim is invisible to
	// its read). Both wait on the same lock, so they run at once: one
	// lock timeout instead of two.
	argss := [][]string{{"resolve", "tx", "k", "--value", "2", "--yes"}, {"resolve", "tx", "k", "--value", "2"}}
	results := make([]result, len(argss))
	var wg sync.WaitGroup
	for i, args := range argss {
		wg.Go(func() { results[i] = runCLI(t, p.flags(args...)...) })
	}
	wg.Wait()
	for i, args := range argss {
		res := results[i]
		assert.Equal(t, exitFailure, res.code, "%q: %s", args, res)
		assert.Contains(t, res.stderr, "locked by a transaction that has not committed", "%q", args)
		assert.NotContains(t, res.stderr, "reconciler", "%q", args)
	}
	close(release)
	require.NoError(t, <-done)
	v := getJSON(t, p.flags(), "tx", "k")
	assert.Equal(t, "completed", v.State)
	assert.JSONEq(t, "1", string(v.Outcome), "the transaction's outcome stands")
}
