package oncehttp_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends/memory"
	"github.com/stagedoor/once/internal/envelope"
	"github.com/stagedoor/once/oncehttp"
)

func TestStoredResponseForOperators(t *testing.T) {
	store := memory.New(nil)
	keeper := once.New(store)
	mw, err := oncehttp.New(keeper, oncehttp.Config{Scope: func(*http.Request) (string, error) { return "client-1", nil }})
	require.NoError(t, err)
	runs := 0
	h := mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs++
		w.Header().Set("Location", "/orders/1")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"id":1}`))
	}))
	post := func(key string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(`{"sku":"a"}`))
		req.Header.Set("Idempotency-Key", key)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	require.Equal(t, http.StatusCreated, post("k1").Code)

	rec, err := store.Get(t.Context(), "client-1", "k1")
	require.NoError(t, err)
	require.NotZero(t, rec.State)
	env, err := envelope.Parse(rec.Outcome)
	require.NoError(t, err)
	require.Equal(t, envelope.KindValue, env.Kind)
	resp, ok := oncehttp.DecodeStoredResponse(env.Value)
	require.True(t, ok)
	require.Equal(t, http.StatusCreated, resp.Status)
	require.Equal(t, "/orders/1", resp.Header.Get("Location"))
	require.Equal(t, `{"id":1}`, string(resp.Body))

	_, ok = oncehttp.DecodeStoredResponse([]byte(`{"id":1}`))
	require.False(t, ok, "a JSON value is not a stored response")
	_, ok = oncehttp.DecodeStoredResponse([]byte{2, 0xff})
	require.False(t, ok, "a truncated response is not one")

	// An operator resolves a key nobody completed; the next request replays it.
	err = oncehttp.ResolveResponse(t.Context(), keeper.Scope("client-1"), "k2", nil, oncehttp.StoredResponse{
		Status: http.StatusCreated, Header: http.Header{"Location": {"/orders/7"}, "Set-Cookie": {"secret"}}, Body: []byte(`{"id":7}`),
	})
	require.NoError(t, err)
	got := post("k2")
	require.Equal(t, http.StatusCreated, got.Code)
	require.Equal(t, "/orders/7", got.Header().Get("Location"))
	require.Empty(t, got.Header().Get("Set-Cookie"), "never-stored headers are dropped")
	require.Equal(t, "true", got.Header().Get(oncehttp.ReplayedHeader))
	require.Equal(t, `{"id":7}`, got.Body.String())
	require.Equal(t, 1, runs, "the resolved key never reached the handler")

	var invalid *once.InvalidInputError
	require.ErrorAs(t, oncehttp.ResolveResponse(t.Context(), keeper.Scope("client-1"), "k3", nil, oncehttp.StoredResponse{Status: 42}), &invalid)
}

// ResolveResponse stores only what a replay can send: a final status (a
// 1xx never ends a response, so every retry would get 500), and headers
// under their canonical names whatever case the caller wrote them in.
func TestResolveResponseStoresWhatAReplaySends(t *testing.T) {
	keeper := once.New(nil)
	mw, err := oncehttp.New(keeper, oncehttp.Config{Scope: func(*http.Request) (string, error) { return "u", nil }})
	require.NoError(t, err)
	h := mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "timeout", http.StatusGatewayTimeout) // held
	}))
	post := func(key string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/pay", strings.NewReader("b"))
		req.Header.Set("Idempotency-Key", key)
		h.ServeHTTP(rec, req)
		return rec
	}
	for _, status := range []int{0, 42, 100, 102, 103, 199, 1000} {
		var invalid *once.InvalidInputError
		err := oncehttp.ResolveResponse(t.Context(), keeper.Scope("u"), "a", nil, oncehttp.StoredResponse{Status: status, Body: []byte("x")})
		require.ErrorAs(t, err, &invalid, "status %d", status)
		require.Equal(t, "status", invalid.Field)
	}

	require.Equal(t, http.StatusGatewayTimeout, post("b").Code)
	require.NoError(t, oncehttp.ResolveResponse(t.Context(), keeper.Scope("u"), "b", nil, oncehttp.StoredResponse{
		Status: http.StatusCreated,
		Header: http.Header{"location": {"/p/1"}, "CONTENT-TYPE": {"text/plain"}, "content-encoding": {"identity"}},
		Body:   []byte("done"),
	}))
	got := post("b")
	require.Equal(t, http.StatusCreated, got.Code)
	require.Equal(t, "/p/1", got.Header().Get("Location"))
	require.Equal(t, "text/plain", got.Header().Get("Content-Type"))
	require.Equal(t, "identity", got.Header().Get("Content-Encoding"))
	require.Equal(t, "done", got.Body.String())
}
