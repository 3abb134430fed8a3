package redisstore_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
)

// counter is a go-redis hook that records the name of every command sent.
type counter struct {
	mu   sync.Mutex
	cmds []string
}

func (c *counter) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (c *counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.mu.Lock()
		c.cmds = append(c.cmds, cmd.Name())
		c.mu.Unlock()
		return next(ctx, cmd)
	}
}

func (c *counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.mu.Lock()
		for _, cmd := range cmds {
			c.cmds = append(c.cmds, cmd.Name())
		}
		c.mu.Unlock()
		return next(ctx, cmds)
	}
}

// take returns the commands recorded since the last take.
func (c *counter) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	cmds := c.cmds
	c.cmds = nil
	return cmds
}

// countingClient returns a fresh single-node client with a counter hook.
func countingClient(t *testing.T) (*redis.Client, *counter) {
	t.Helper()
	singleClient(t) // skip when the server is down
	c := redis.NewClient(&redis.Options{Addr: singleAddr()})
	t.Cleanup(func() { _ = c.Close() })
	n := &counter{}
	c.AddHook(n)
	return c, n
}

// claimCommands is one claim without a script: PTTL and SET NX GET, one
// pipeline (one round trip).
var claimCommands = []string{"pttl", "set"}

// warmPipelines sends one claim, so that the connection go-redis dials for
// its pipeline pool (with its HELLO and CLIENT SETINFO) is not counted.
func warmPipelines(t *testing.T, s backends.Store, n *counter) {
	t.Helper()
	_, err := s.Claim(context.Background(), backends.ClaimParams{Scope: backendtest.Scope(t), Key: "warm", Owner: backendtest.Token(), Lease: time.Minute, Retention: time.Minute})
	require.NoError(t, err)
	n.take()
}

func TestCommandsPerOperation(t *testing.T) {
	c, n := countingClient(t)
	s := newStore(t, c, nil)
	warmPipelines(t, s, n) // and New's eviction check and script loading
	ctx := context.Background()
	scope, owner := backendtest.Scope(t), backendtest.Token()
	claim := func(key, fp string, lease time.Duration) backends.ClaimResult {
		t.Helper()
		r, err := s.Claim(ctx, backends.ClaimParams{Scope: scope, Key: key, Fingerprint: []byte(fp), Owner: backendtest.Token(), Lease: lease, Retention: time.Hour})
		require.NoError(t, err)
		return r
	}
	one := []string{"evalsha"}

	r, err := s.Claim(ctx, backends.ClaimParams{Scope: scope, Key: "k", Fingerprint: []byte("fp"), Owner: owner, Lease: time.Minute, Retention: time.Hour})
	require.NoError(t, err)
	require.True(t, r.Claimed)
	assert.Equal(t, claimCommands, n.take(), "claim of a new key")

	assert.Equal(t, backends.StatePending, claim("k", "fp", time.Minute).Existing.State)
	assert.Equal(t, claimCommands, n.take(), "claim while in progress")

	ok, err := s.Complete(ctx, backends.CompleteParams{Scope: scope, Key: "k", Owner: owner, Outcome: []byte("v"), Retention: time.Hour})
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, one, n.take(), "complete")

	assert.Equal(t, []byte("v"), claim("k", "fp", time.Minute).Existing.Outcome)
	assert.Equal(t, claimCommands, n.take(), "replay")

	assert.Equal(t, []byte("fp"), claim("k", "other", time.Minute).Existing.Fingerprint)
	assert.Equal(t, claimCommands, n.take(), "fingerprint mismatch")

	// A lapsed lease: the pipeline finds it, claim.lua takes it over.
	require.True(t, claim("lapsed", "fp", time.Millisecond).Claimed)
	backendtest.Elapse(t, s, time.Millisecond)
	n.take()
	r = claim("lapsed", "fp", time.Minute)
	require.True(t, r.Claimed && r.TookOver, "%+v", r)
	assert.Equal(t, append(append([]string{}, claimCommands...), "evalsha"), n.take(), "takeover")
}

// TestScriptCacheFlushed checks that operations survive a server that lost
// its script cache (a restart, a failover): EVALSHA, NOSCRIPT, then EVAL.
func TestScriptCacheFlushed(t *testing.T) {
	c, n := countingClient(t)
	s := newStore(t, c, nil)
	// SCRIPT FLUSH makes every other user of the server fall back to EVAL
	// once (harmless, but it would disturb concurrent command counts), so
	// it runs where the test owns the server.
	if !requireServers() {
		t.Skip("SCRIPT FLUSH affects every user of the server; runs only with ONCE_REQUIRE_SERVERS=1 or CI")
	}
	ctx := context.Background()
	scope, owner := backendtest.Scope(t), backendtest.Token()
	r, err := s.Claim(ctx, backends.ClaimParams{Scope: scope, Key: "k", Owner: owner, Lease: time.Minute, Retention: time.Hour})
	require.NoError(t, err)
	require.True(t, r.Claimed)
	require.NoError(t, c.ScriptFlush(ctx).Err())
	n.take()
	ok, err := s.Complete(ctx, backends.CompleteParams{Scope: scope, Key: "k", Owner: owner, Outcome: []byte("v"), Retention: time.Hour})
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, []string{"evalsha", "eval"}, n.take())
}
