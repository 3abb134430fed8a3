package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/redisstore"
	"github.com/stagedoor/once/oncehttp"
)

// injection: text output quotes a stored message, header or body line
// that holds a control character, so it never forges a line or sends a
// terminal escape; --json keeps the text as it is.
func injection(t *testing.T, store backends.Store, flags func(...string) []string) {
	ctx := context.Background()
	forged := "timeout\nheld          1s  shop                     forged  (x)\x1b[2J"
	r, err := store.Claim(ctx, backends.ClaimParams{Scope: "inj", Key: "k", Owner: "o", Lease: time.Minute, Retention: time.Hour})
	require.NoError(t, err)
	require.True(t, r.Claimed)
	ok, err := store.Hold(ctx, backends.HoldParams{Scope: "inj", Key: "k", Owner: "o", For: time.Hour, Code: "c\x1b]0;x\x07", Message: forged, Retention: time.Hour})
	require.NoError(t, err)
	require.True(t, ok)
	scope := once.New(store).Scope("inj")
	require.NoError(t, oncehttp.ResolveResponse(ctx, scope, "h", nil, oncehttp.StoredResponse{
		Status: 200, Header: http.Header{"Location": {"/a\x1b[31m"}}, Body: []byte("ok\r\nline 2\x1b[2J\n"),
	}))

	for _, args := range [][]string{{"list", "--scope", "inj"}, {"get", "inj", "k"}, {"get", "inj", "h"}} {
		out := mustRun(t, flags(args...)...)
		assert.NotContains(t, out, "\x1b", "%q", args)
		assert.NotContains(t, out, "\r", "%q", args)
		assert.NotContains(t, out, "\x07", "%q", args)
	}
	out := mustRun(t, flags("list", "--scope", "inj")...)
	assert.Len(t, strings.Split(strings.TrimSpace(out), "\n"), 3, "header, one record, summary:\n%s", out)
	assert.Contains(t, out, `"timeout\nheld `)
	out = mustRun(t, flags("get", "inj", "h")...)
	assert.Contains(t, out, `Location: "/a\x1b[31m"`)
	assert.Contains(t, out, `  "ok\r"`)
	assert.Contains(t, out, `  "line 2\x1b[2J"`)
	assert.Equal(t, forged, getJSON(t, flags(), "inj", "k").HeldMessage, "--json keeps the text")
}

// truncation: list --json ends with a marker object when it stopped at
// --limit, and has none when it listed everything.
func truncation(t *testing.T, store backends.Store, flags func(...string) []string) {
	for _, key := range []string{"a", "b"} {
		r, err := store.Claim(context.Background(), backends.ClaimParams{Scope: "trunc", Key: key, Owner: "o", Lease: time.Minute, Retention: time.Hour})
		require.NoError(t, err)
		require.True(t, r.Claimed)
	}
	out := mustRun(t, flags("--json", "list", "--scope", "trunc", "--limit", "2")...)
	assert.Len(t, strings.Split(strings.TrimSpace(out), "\n"), 2, out)
	for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		assert.NotContains(t, line, "truncated")
	}
	out = mustRun(t, flags("--json", "list", "--scope", "trunc", "--limit", "1", "--page", "1")...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, out)
	assert.JSONEq(t, `{"truncated":true,"limit":1}`, lines[1])
}

func TestPostgresOutput(t *testing.T) {
	p := newPG(t)
	s := migrated(t, p)
	t.Run("Injection", func(t *testing.T) { injection(t, s, p.flags) })
	t.Run("Truncation", func(t *testing.T) { truncation(t, s, p.flags) })
}

func TestRedisOutput(t *testing.T) {
	for name, cluster := range map[string]bool{"single": false, "cluster": true} {
		t.Run(name, func(t *testing.T) {
			r := newRedis(t, cluster)
			store, err := redisstore.New(context.Background(), r.client, &redisstore.Config{
				KeyPrefix: r.prefix, EvictionPolicyCheck: redisstore.EvictionIgnore,
			})
			require.NoError(t, err)
			t.Run("Injection", func(t *testing.T) { injection(t, store, r.flags) })
			t.Run("Truncation", func(t *testing.T) { truncation(t, store, r.flags) })
		})
	}
}

// TestCheckQuotesStoreText: check's texts quote what came from the server
// or the user (a Redis node's address from a Cluster's topology, a table
// name), as list and get do, so it never forges a line or sends an escape.
// (Schema and table names are refused unless ASCII letters, digits and
// underscores before any output; the quoting is the second line.)
func TestCheckQuotesStoreText(t *testing.T) {
	forged := "10.0.0.1:6379\nredis: reachable; maxmemory-policy is noeviction on every primary\x1b[2J"
	version := 3
	for _, text := range []string{
		evictionProblem(&redisstore.EvictionPolicyError{Addr: forged, Policy: "allkeys-lru\r\n"}),
		checkResult{Store: "postgres", OK: true, Table: forged, Version: &version, LatestVersion: 3}.summary(),
	} {
		assert.NotContains(t, text, "\n", "%q", text)
		assert.NotContains(t, text, "\r", "%q", text)
		assert.NotContains(t, text, "\x1b", "%q", text)
		assert.Contains(t, text, `"10.0.0.1:6379\nredis: reachable;`, "quoted as a Go string literal")
	}
	assert.Equal(t, `redis 10.0.0.1:6379 has maxmemory-policy "allkeys-lru": records can be evicted under memory pressure, and an evicted key runs again; set it to noeviction`,
		evictionProblem(&redisstore.EvictionPolicyError{Addr: "10.0.0.1:6379", Policy: "allkeys-lru"}), "printable text is printed as it is")
}
