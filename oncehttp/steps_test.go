package oncehttp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/oncehttp"
)

// A handler's steps resume across requests: the charge is checkpointed by
// the first request, whose 503 released the key, and the retry writes the
// order without charging again.
func TestHandlerStepsResumeAcrossRequests(t *testing.T) {
	m, err := oncehttp.New(once.New(nil), oncehttp.Config{Scope: func(*http.Request) (string, error) { return "buyer-42", nil }})
	require.NoError(t, err)
	var charges, orders atomic.Int64
	var orderServiceUp atomic.Bool
	h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chargeID, err := once.Step(r.Context(), "charge", func(context.Context) (string, error) {
			charges.Add(1)
			return "ch_1", nil
		})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if !orderServiceUp.Load() {
			http.Error(w, "order service unavailable", http.StatusServiceUnavailable)
			return
		}
		orders.Add(1)
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte("order paid by " + chargeID))
	}))
	send := func() *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(`{"item":"beans"}`))
		req.Header.Set(oncehttp.DefaultHeader, "checkout-9b1e4d3a")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	first := send()
	require.Equal(t, http.StatusServiceUnavailable, first.Code, first.Body.String())
	orderServiceUp.Store(true)
	rec := send()
	require.Equal(t, http.StatusCreated, rec.Code)
	require.Equal(t, "order paid by ch_1", rec.Body.String())
	rec = send()
	require.Equal(t, "true", rec.Header().Get(oncehttp.ReplayedHeader))
	require.Equal(t, int64(1), charges.Load(), "the retry resumed after the checkpointed charge")
	require.Equal(t, int64(1), orders.Load())
}
