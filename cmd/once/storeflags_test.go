package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
)

// TestEmptyStoreFlag: a store flag on the command line counts as given
// whatever its value. An empty one (an unset shell variable) is a usage
// error; it never falls back to $ONCE_POSTGRES_URL, whose record stays.
func TestEmptyStoreFlag(t *testing.T) {
	p := newPG(t)
	s := migrated(t, p)
	ctx := context.Background()
	r, err := s.Claim(ctx, backends.ClaimParams{Scope: "s", Key: "k", Owner: "o", Lease: time.Minute, Retention: time.Hour})
	require.NoError(t, err)
	require.True(t, r.Claimed)
	t.Setenv("ONCE_POSTGRES_URL", p.url)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--redis", ""}, "--redis is empty"},
		{[]string{"--redis="}, "--redis is empty"},
		{[]string{"--redis-cluster", ""}, "--redis-cluster has an empty address"},
		{[]string{"--redis-cluster", "127.0.0.1:1,,127.0.0.1:2"}, "--redis-cluster has an empty address"},
		{[]string{"--postgres", ""}, "--postgres is empty"},
		{[]string{"--postgres", "", "--redis", ""}, "choose one store"},
		{[]string{"--postgres", p.url, "--redis", ""}, "choose one store"},
		{[]string{"--mysql", ""}, "--mysql is empty"},
		{[]string{"--sqlite", ""}, "--sqlite is empty"},
		{[]string{"--mysql", "root@tcp(127.0.0.1:1)/x", "--sqlite", "x.db"}, "choose one store"},
		{[]string{"--mysql", "root@tcp(127.0.0.1:1)/x", "--table", "Bad-Name"}, "invalid"},
	} {
		args := append(append(append([]string{}, c.args...), "--schema", p.schema), "delete", "--yes", "s", "k")
		res := runCLI(t, args...)
		assert.Equal(t, exitUsage, res.code, "%q\n%s", c.args, res)
		assert.Contains(t, res.stderr, c.want, "%q", c.args)
		assert.Equal(t, "pending", getJSON(t, p.flags(), "s", "k").State, "%q deleted nothing", c.args)
	}
	// Without any store flag, $ONCE_POSTGRES_URL is the store.
	assert.Equal(t, "pending", getJSON(t, []string{"--schema", p.schema}, "s", "k").State)
}

// TestRedisCredentials: --redis takes a redis:// URL; no error echoes its
// password, its address or the driver's raw message (the reason a
// connection failed is in words of the store's own: see
// TestRedisUnreachable).
func TestRedisCredentials(t *testing.T) {
	r := newRedis(t, false)
	mustRun(t, "--redis", "redis://"+redisAddr()+"/0", "--prefix", r.prefix, "get", "s", "k")
	for _, args := range [][]string{
		{"--redis", "redis://:hunter2@" + redisAddr(), "get", "s", "k"},
		{"--redis", "redis://admin:hunter2@127.0.0.1:1", "get", "s", "k"},
		{"--redis", ":hunter2@127.0.0.1:1", "get", "s", "k"},
		{"--redis", "redis://:hunter2@[::1", "get", "s", "k"},
		{"--redis-cluster", "redis://:hunter2@127.0.0.1:1", "check"},
		{"--redis", "127.0.0.1:1", "get", "s", "k"},
	} {
		res := runCLI(t, args...)
		for _, leak := range []string{"hunter2", "admin", "dial", "127.0.0.1"} {
			assert.NotContains(t, res.stderr+res.stdout, leak, "%q", args)
		}
	}
	res := runCLI(t, "--redis", "redis://admin:hunter2@127.0.0.1:1", "get", "s", "k")
	assert.Equal(t, exitFailure, res.code, "%s", res)
	assert.Contains(t, res.stderr, "once/redisstore: ")
}

// TestMySQLCredentials: no error echoes the password of a --mysql DSN,
// well-formed or not.
func TestMySQLCredentials(t *testing.T) {
	for _, dsn := range []string{"root:hunter2@tcp(127.0.0.1:1)/test", "root:hunter2@bad(", "root:hunter2@tcp(127.0.0.1:1)/test?nosuchparam=%zz"} {
		res := runCLI(t, "--mysql", dsn, "get", "s", "k")
		assert.NotEqual(t, exitOK, res.code, "%s", res)
		assert.NotContains(t, res.stderr+res.stdout, "hunter2", "%q", dsn)
	}
}
