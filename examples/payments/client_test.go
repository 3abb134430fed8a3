package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/oncehttp"
)

// TestUnknownOutcomeOnlyWhenTheRequestLeft checks the shop's
// classification of a failed charge: held only when the request was sent
// and no answer came back; released when the connection was refused (the
// request never left), when the provider answered, and when the shop
// itself stopped.
func TestUnknownOutcomeOnlyWhenTheRequestLeft(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	req := chargeRequest{OrderID: "o1", Amount: 1, Card: "4242424242424242"}
	noRetry := func(oncehttp.Retry) {}

	// A port nobody listens on: every attempt is refused at dial.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	refused := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close())
	_, _, err = newPayrail(refused, noRetry).charge(ctx, "k", req)
	require.Error(t, err)
	assert.False(t, unknownOutcome(ctx, err), "refused at dial: the request never left: %v", err)

	// A provider that reads the request and hangs up without answering.
	hangUp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			_ = conn.Close()
		}
	}))
	defer hangUp.Close()
	_, _, err = newPayrail(hangUp.URL, noRetry).charge(ctx, "k", req)
	require.Error(t, err)
	assert.True(t, unknownOutcome(ctx, err), "sent, no answer: %v", err)

	// The provider answered: its 409 and 5xx are answers, not unknowns.
	for _, status := range []int{http.StatusConflict, http.StatusServiceUnavailable, http.StatusInternalServerError} {
		answering := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(status)
		}))
		_, _, err = newPayrail(answering.URL, noRetry).charge(ctx, "k", req)
		answering.Close()
		require.Error(t, err)
		assert.False(t, unknownOutcome(ctx, err), "%d: %v", status, err)
	}

	// The shop's own shutdown releases: the restarted shop resends the
	// same DerivedKey.
	stopped, cancel := context.WithCancel(ctx)
	cancel()
	_, _, err = newPayrail(hangUp.URL, noRetry).charge(stopped, "k", req)
	require.Error(t, err)
	assert.False(t, unknownOutcome(stopped, err))
	assert.False(t, unknownOutcome(ctx, nil))
}
