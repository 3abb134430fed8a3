package main

import (
	"context"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
)

// The scenarios every store runs: the library writes, the CLI reads,
// deletes and resolves.

type order struct {
	ID     int    `json:"id"`
	Status string `json:"status"`
}

var testFP = once.Fingerprint("0123456789abcdef0123456789abcdef")

// lifecycle: once.Do → get shows the completed outcome → delete → get
// shows absent, and the key is a new intent again.
func lifecycle(t *testing.T, store backends.Store, flags func(...string) []string) {
	ctx := context.Background()
	scope := once.New(store).Scope("orders")
	_, err := once.Do(ctx, scope, "k1", testFP, func(context.Context) (order, error) {
		return order{ID: 7, Status: "paid"}, nil
	})
	require.NoError(t, err)

	v := getJSON(t, flags(), "orders", "k1")
	assert.Equal(t, "completed", v.State)
	assert.Equal(t, hex.EncodeToString(testFP), v.Fingerprint)
	assert.Equal(t, "value", v.OutcomeKind)
	assert.JSONEq(t, `{"id":7,"status":"paid"}`, string(v.Outcome))
	assert.Positive(t, v.OutcomeSize)
	assert.Nil(t, v.LeaseRemainingMS)
	assert.InDelta(t, (24 * time.Hour).Milliseconds(), v.ExpiresInMS, float64(time.Minute.Milliseconds()))

	text := mustRun(t, flags("get", "orders", "k1")...)
	for _, want := range []string{"state:       completed", "fingerprint: " + hex.EncodeToString(testFP), "bytes, value", `"status": "paid"`} {
		assert.Contains(t, text, want)
	}

	r := runCLI(t, flags("delete", "orders", "k1")...)
	assert.Equal(t, exitUsage, r.code, "delete without --yes\n%s", r)
	assert.Contains(t, r.stderr, "--yes")
	assert.Equal(t, "completed", getJSON(t, flags(), "orders", "k1").State, "nothing deleted without --yes")

	assert.Contains(t, mustRun(t, flags("delete", "--yes", "orders", "k1")...), "deleted")
	assert.Equal(t, "absent", getJSON(t, flags(), "orders", "k1").State)
	assert.Contains(t, mustRun(t, flags("get", "orders", "k1")...), "state:       absent")
	assert.Contains(t, mustRun(t, flags("--json", "delete", "--yes", "orders", "k1")...), `"deleted":false`)

	ran := false
	_, err = once.Do(ctx, scope, "k1", testFP, func(context.Context) (order, error) {
		ran = true
		return order{ID: 8}, nil
	})
	require.NoError(t, err)
	assert.True(t, ran, "a deleted key is a new intent")
}

// held: a held key shows held, with its hold and error; resolve stores a
// value (then a final error on another key) that the library replays.
func held(t *testing.T, store backends.Store, flags func(...string) []string) {
	ctx := context.Background()
	scope := once.New(store, once.WithLease(time.Minute)).Scope("payments")
	timeout := errors.New("provider timed out")
	hold := func(context.Context) (order, error) { return order{}, once.Hold(timeout) }
	for _, key := range []string{"p1", "p2", "p3"} {
		_, err := once.Do(ctx, scope, key, testFP, hold)
		require.ErrorIs(t, err, timeout)
	}

	v := getJSON(t, flags(), "payments", "p1")
	assert.Equal(t, "held", v.State)
	require.NotNil(t, v.HoldRemainingMS)
	assert.Greater(t, *v.HoldRemainingMS, int64(50_000), "held for one lease by default")
	assert.Equal(t, "provider timed out", v.HeldMessage)
	assert.Empty(t, v.OutcomeKind)
	assert.Contains(t, mustRun(t, flags("get", "payments", "p1")...), "more; provider timed out")
	_, err := once.Do(ctx, scope, "p1", testFP, hold)
	require.ErrorIs(t, err, once.ErrInProgress)

	fp := hex.EncodeToString(testFP)
	assert.Contains(t, mustRun(t, flags("resolve", "payments", "p1", "--value", `{"id": 9, "status": "paid"}`, "--fingerprint", fp)...), "resolved: stored a JSON value")
	out, err := once.DoOutcome(ctx, scope, "p1", testFP, hold)
	require.NoError(t, err)
	assert.Equal(t, once.Replayed, out.Status)
	assert.Equal(t, order{ID: 9, Status: "paid"}, out.Value)

	r := runCLI(t, flags("resolve", "payments", "p1", "--value", `{}`)...)
	assert.Equal(t, exitFailure, r.code, "%s", r)
	assert.Contains(t, r.stderr, "already completed")

	r = runCLI(t, flags("resolve", "payments", "p2", "--value", `{}`, "--fingerprint", "abcd")...)
	assert.Equal(t, exitFailure, r.code, "%s", r)
	assert.Contains(t, r.stderr, "another fingerprint")
	assert.Equal(t, "held", getJSON(t, flags(), "payments", "p2").State)

	mustRun(t, flags("resolve", "payments", "p2", "--error", "card declined", "--code", "card_declined")...)
	_, err = once.Do(ctx, scope, "p2", testFP, hold)
	var stored *once.StoredError
	require.ErrorAs(t, err, &stored)
	assert.Equal(t, "card_declined", stored.Code)
	assert.Equal(t, "card declined", stored.Message)
	text := mustRun(t, flags("get", "payments", "p2")...)
	assert.Contains(t, text, "final error")
	assert.Contains(t, text, `"code": "card_declined"`)

	// A reconciler's live lease on a held key refuses a resolve, which
	// says so.
	_, err = once.Do(ctx, scope, "p4", testFP, hold)
	require.ErrorIs(t, err, timeout)
	leaser, ok := store.(interface {
		LeaseHeld(context.Context, backends.LeaseHeldParams) (backends.LeaseHeldResult, error)
	})
	require.True(t, ok)
	leased, err := leaser.LeaseHeld(ctx, backends.LeaseHeldParams{Scope: "payments", Key: "p4", Owner: "reconciler", Lease: time.Minute})
	require.NoError(t, err)
	require.True(t, leased.Leased)
	r = runCLI(t, flags("resolve", "payments", "p4", "--value", `{}`)...)
	assert.Equal(t, exitFailure, r.code, "%s", r)
	assert.Contains(t, r.stderr, "a reconciler is asking about the key")
	assert.NotContains(t, r.stderr, "already completed")
	assert.Equal(t, "held", getJSON(t, flags(), "payments", "p4").State)

	// Delete fences the held owner: its claim is gone, the key is new.
	mustRun(t, flags("delete", "--yes", "payments", "p3")...)
	assert.Equal(t, "absent", getJSON(t, flags(), "payments", "p3").State)
	res, err := store.Claim(ctx, backends.ClaimParams{Scope: "payments", Key: "p3", Owner: "new-owner", Fingerprint: testFP, Lease: time.Minute, Retention: time.Hour})
	require.NoError(t, err)
	assert.True(t, res.Claimed)
}

func TestOutputNeverEchoesBadInput(t *testing.T) {
	secret := "tok_" + strings.Repeat("x", 300)
	r := runCLI(t, "--redis", "127.0.0.1:1", "get", "s", secret)
	assert.Equal(t, exitUsage, r.code)
	assert.NotContains(t, r.stderr+r.stdout, secret)
}
