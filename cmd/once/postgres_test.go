package main

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
	"github.com/stagedoor/once/backends/postgres"
)

// migrated runs once migrate in p's schema and returns a Store on it.
func migrated(t *testing.T, p pgEnv) *postgres.Store {
	t.Helper()
	assert.Contains(t, mustRun(t, p.flags("migrate")...), "migrated from version 0 to 1")
	assert.Contains(t, mustRun(t, p.flags("migrate")...), "up to date at version 1")
	s, err := postgres.New(p.pool, &postgres.Config{Schema: p.schema})
	require.NoError(t, err)
	return s
}

func TestPostgresLifecycle(t *testing.T) {
	p := newPG(t)
	lifecycle(t, migrated(t, p), p.flags)
}

func TestPostgresResolveHeld(t *testing.T) {
	p := newPG(t)
	held(t, migrated(t, p), p.flags)
}

func TestPostgresSteps(t *testing.T) {
	p := newPG(t)
	steps(t, migrated(t, p), p.flags)
}

func TestPostgresOperator(t *testing.T) {
	p := newPG(t)
	operator(t, migrated(t, p), p.flags)
}

func TestPostgresCheck(t *testing.T) {
	p := newPG(t)
	r := runCLI(t, p.flags("check")...)
	assert.Equal(t, exitFailure, r.code, "an unmigrated table fails the check\n%s", r)
	assert.Contains(t, r.stdout, "run once migrate")

	migrated(t, p)
	out := mustRun(t, p.flags("--json", "check")...)
	var res checkResult
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	assert.True(t, res.OK)
	require.NotNil(t, res.Version)
	assert.Equal(t, 1, *res.Version)
	assert.Equal(t, 1, res.LatestVersion)
	assert.Contains(t, mustRun(t, p.flags("check")...), "at migration version 1 (latest 1)")
}

func TestPostgresSweep(t *testing.T) {
	p := newPG(t)
	s := migrated(t, p)
	ctx := context.Background()
	for i, retention := range []time.Duration{time.Millisecond, time.Millisecond, time.Millisecond, time.Hour} {
		// A pending record lives until its lease ends: the expired ones
		// have a lease as short as their retention.
		r, err := s.Claim(ctx, backends.ClaimParams{Scope: "jobs", Key: string(rune('a' + i)), Owner: "o", Lease: min(time.Second, retention), Retention: retention})
		require.NoError(t, err)
		require.True(t, r.Claimed)
	}
	backendtest.Elapse(t, s, time.Millisecond) // past the short leases and retentions
	out := mustRun(t, p.flags("--json", "sweep", "--batch", "2")...)
	var res sweepResult
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	assert.EqualValues(t, 3, res.Swept, "three expired rows, in batches of two")
	var rows int
	require.NoError(t, p.pool.QueryRow(ctx, `SELECT count(*) FROM "`+p.schema+`".once_records`).Scan(&rows))
	assert.Equal(t, 1, rows, "the live row stays")
	assert.Equal(t, "pending", getJSON(t, p.flags(), "jobs", "d").State)
	assert.Contains(t, mustRun(t, p.flags("sweep")...), "swept 0 expired records")
}

func TestPostgresSweepLoopStopsOnSignal(t *testing.T) {
	p := newPG(t)
	migrated(t, p)
	ctx, cancel := context.WithCancel(context.Background()) // main cancels it on SIGINT/SIGTERM
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, p.flags("sweep", "--loop", "20ms"), &stdout, &stderr) }()
	require.Eventually(t, func() bool { return strings.Count(stdout.String(), "swept") >= 2 }, 10*time.Second, 5*time.Millisecond)
	cancel()
	select {
	case code := <-done:
		assert.Equal(t, exitOK, code, "stderr: %s", stderr.String())
	case <-time.After(10 * time.Second):
		t.Fatal("sweep --loop did not stop when its context ended")
	}
}

// TestPostgresCannotConnectSaysWhy: a connection that fails is reported
// with its reason, in words that quote neither the URL's password, user
// and host nor the database's name (it said "cannot connect" alone).
func TestPostgresCannotConnectSaysWhy(t *testing.T) {
	u, err := url.Parse(newPG(t).url)
	require.NoError(t, err)
	u.Path = "/" + randomName("no_such_db_")
	for _, tc := range []struct{ url, reason string }{
		{"postgres://admin:hunter2@127.0.0.1:1/db?connect_timeout=2", "cannot connect: connection refused"},
		{"postgres://admin:hunter2@no-such-host.invalid/db?connect_timeout=2", "cannot connect: host not found"},
		{u.String(), "cannot connect: database does not exist (SQLSTATE 3D000)"},
	} {
		r := runCLI(t, "--postgres", tc.url, "get", "s", "k")
		assert.Equal(t, exitFailure, r.code, "%s", r)
		assert.Equal(t, "once/postgres: get: "+tc.reason+"\n", r.stderr)
		for _, leak := range []string{"hunter2", "admin", "127.0.0.1", "no-such-host", strings.TrimPrefix(u.Path, "/")} {
			assert.NotContains(t, r.stderr+r.stdout, leak)
		}
	}
}

func TestPostgresUnreachableLeaksNothing(t *testing.T) {
	r := runCLI(t, "--postgres", "postgres://admin:hunter2@[::1", "check")
	assert.Equal(t, exitUsage, r.code, "%s", r)
	assert.NotContains(t, r.stderr, "hunter2")
}
