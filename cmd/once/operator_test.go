package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/oncehttp"
)

// operator exercises list, stats, get and resolve on held, pending and
// oncehttp records of a store that implements Lister.
func operator(t *testing.T, store backends.Store, flags func(...string) []string) {
	ctx := context.Background()
	h := store
	claim := func(scope, key, owner string) {
		r, err := store.Claim(ctx, backends.ClaimParams{Scope: scope, Key: key, Owner: owner, Fingerprint: testFP, Lease: time.Minute, Retention: time.Hour})
		require.NoError(t, err)
		require.True(t, r.Claimed)
	}
	for _, key := range []string{"order-1", "order-2"} {
		claim("shop", key, "owner-"+key)
		ok, err := h.Hold(ctx, backends.HoldParams{Scope: "shop", Key: key, Owner: "owner-" + key, For: backends.HoldUntilResolved, Code: "provider_timeout", Message: "no answer in 10s", Retention: time.Hour})
		require.NoError(t, err)
		require.True(t, ok)
	}
	claim("shop", "order-3", "owner-3")
	claim("other", "order-1", "owner-4")

	out := mustRun(t, flags("--json", "list", "--state", "held")...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, out)
	var v listedView
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &v))
	assert.Equal(t, "held", v.State)
	assert.Equal(t, "shop", v.Scope)
	assert.True(t, v.HoldUntilResolved)
	assert.Equal(t, "provider_timeout", v.HeldCode)

	text := mustRun(t, flags("list")...)
	assert.Contains(t, text, "4 record(s)")
	assert.Contains(t, text, "held until resolved; provider_timeout: no answer in 10s")
	assert.Contains(t, text, "running, lease")
	assert.Contains(t, mustRun(t, flags("list", "--scope", "other")...), "1 record(s)")
	assert.Contains(t, mustRun(t, flags("list", "--key-prefix", "order-3")...), "1 record(s)")
	assert.Contains(t, mustRun(t, flags("list", "--older-than", "1h")...), "0 record(s)")
	assert.Contains(t, mustRun(t, flags("list", "--limit", "3")...), "stopped at --limit 3")

	var s statsView
	require.NoError(t, json.Unmarshal([]byte(mustRun(t, flags("--json", "stats")...)), &s))
	assert.Equal(t, int64(2), s.Held)
	assert.Equal(t, int64(2), s.Pending)
	assert.Equal(t, int64(4), s.Stored)
	assert.Positive(t, s.Bytes)
	assert.Contains(t, mustRun(t, flags("stats")...), "held:       2   oldest")

	g := getJSON(t, flags(), "shop", "order-1")
	assert.Equal(t, "held", g.State)
	assert.Equal(t, "no answer in 10s", g.HeldMessage)
	assert.Contains(t, mustRun(t, flags("get", "shop", "order-1")...), "held until resolved")

	// resolve without --fingerprint keeps the key's.
	mustRun(t, flags("resolve", "shop", "order-1", "--value", `{"id":1}`)...)
	g = getJSON(t, flags(), "shop", "order-1")
	assert.Equal(t, "completed", g.State)
	assert.Equal(t, hex.EncodeToString(testFP), g.Fingerprint, "the stored fingerprint is kept")

	// An HTTP key: resolved with a response, shown as one, replayed.
	keeper := once.New(store)
	mw, err := oncehttp.New(keeper, oncehttp.Config{Scope: func(*http.Request) (string, error) { return "api", nil }})
	require.NoError(t, err)
	handler := mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		t.Error("a resolved key never reaches the handler")
	}))
	mustRun(t, flags("resolve", "api", "pay-1", "--status", "201", "--header", "Location: /payments/1", "--header", "Content-Type: application/json", "--body", `{"id":"pay_1"}`)...)
	text = mustRun(t, flags("get", "api", "pay-1")...)
	assert.Contains(t, text, "HTTP 201")
	assert.Contains(t, text, "Location: /payments/1")
	assert.Contains(t, text, `{"id":"pay_1"}`)
	g = getJSON(t, flags(), "api", "pay-1")
	require.NotNil(t, g.HTTP)
	assert.Equal(t, 201, g.HTTP.Status)
	req := httptest.NewRequest(http.MethodPost, "/payments", strings.NewReader("{}"))
	req.Header.Set("Idempotency-Key", "pay-1")
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, req)
	assert.Equal(t, 201, rec.Code)
	assert.Equal(t, `{"id":"pay_1"}`, rec.Body.String())

	// --state all lists the completed records too, after the pending and
	// held ones (it listed those alone); the default, open, does not.
	all := mustRun(t, flags("list", "--state", "all")...)
	assert.Contains(t, all, "5 record(s)", all)
	assert.Regexp(t, `(?m)^completed +- +shop +order-1  \(expires in `, all)
	assert.Regexp(t, `(?m)^completed +- +api +pay-1  \(expires in `, all)
	assert.Less(t, strings.Index(all, "held "), strings.Index(all, "completed "), "completed records last")
	assert.Contains(t, mustRun(t, flags("list")...), "3 record(s)")
	out = mustRun(t, flags("--json", "list", "--state", "completed")...)
	lines = strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, out)
	for _, l := range lines {
		require.NoError(t, json.Unmarshal([]byte(l), &v))
		assert.Equal(t, "completed", v.State)
		assert.Positive(t, v.ExpiresInMS)
	}
	assert.Contains(t, mustRun(t, flags("list", "--state", "completed", "--older-than", "1ms")...), "0 record(s)")

	r := runCLI(t, flags("resolve", "api", "pay-2", "--status", "201", "--value", "{}")...)
	assert.Equal(t, exitUsage, r.code, "%s", r)
	r = runCLI(t, flags("resolve", "api", "pay-2", "--status", "201", "--header", "no colon")...)
	assert.Equal(t, exitUsage, r.code, "%s", r)
	r = runCLI(t, flags("list", "--page", "0")...)
	assert.Equal(t, exitUsage, r.code, "%s", r)
}
