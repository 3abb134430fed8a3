package oncehttp

import (
	"bytes"
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/memory"
)

// syncBuffer is a log destination the server's goroutines write to.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// panicServer serves h behind a Middleware on k, logging to the returned
// buffer.
func panicServer(t *testing.T, k *once.Keeper, cfg Config, h http.HandlerFunc) (*httptest.Server, *syncBuffer) {
	t.Helper()
	cfg.Scope = func(*http.Request) (string, error) { return "u", nil }
	m, err := New(k, cfg)
	require.NoError(t, err)
	logs := &syncBuffer{}
	srv := httptest.NewUnstartedServer(m.Handler(h))
	srv.Config.ErrorLog = log.New(logs, "", 0)
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, logs
}

// A handler that charges and then panics (a nil map while rendering) is
// one charge for one client.Do: the panic is answered 500 request-failed
// (not an aborted connection, which the Transport would retry with the
// key), the key is held as for any 5xx of unknown outcome, and a retry
// gets 409 request-outcome-unknown instead of a second charge.
func TestPanicAfterEffectIsOneEffect(t *testing.T) {
	var charges atomic.Int64
	srv, logs := panicServer(t, once.New(nil), Config{}, func(w http.ResponseWriter, r *http.Request) {
		charges.Add(1)
		w.Header().Set("Location", "/charges/1")
		http.SetCookie(w, &http.Cookie{Name: "receipt", Value: "1"})
		var view map[string]int
		//lint:ignore SA5000 the panic under test: a bug while rendering
		view["total"] = 10
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var retries []Retry
	c := NewClient(&Transport{BaseDelay: time.Millisecond, OnRetry: func(r Retry) { retries = append(retries, r) }})
	req, err := http.NewRequestWithContext(WithKey(ctx, "charge-1"), "POST", srv.URL, strings.NewReader("charge 10"))
	require.NoError(t, err)
	resp, err := c.Do(req)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	resp.Body.Close()
	first := reply{status: resp.StatusCode, header: resp.Header, body: string(body)}
	assert.Equal(t, http.StatusInternalServerError, first.status)
	assert.Equal(t, DefaultProblemBase+"request-failed", first.problem(t).Type)
	assert.Empty(t, first.header.Get("Location"), "nothing of the unsent response")
	assert.Empty(t, first.header.Values("Set-Cookie"))
	assert.Empty(t, retries, "a 500 is final")
	assert.Equal(t, int64(1), charges.Load())
	assert.Contains(t, logs.String(), "assignment to entry in nil map", "logged as net/http logs a panic")

	// The caller's own retry, later, with the same key.
	req, err = http.NewRequestWithContext(WithKey(ctx, "charge-1"), "POST", srv.URL, strings.NewReader("charge 10"))
	require.NoError(t, err)
	resp, err = c.Do(req)
	require.NoError(t, err)
	body, err = io.ReadAll(resp.Body)
	require.NoError(t, err)
	resp.Body.Close()
	again := reply{status: resp.StatusCode, header: resp.Header, body: string(body)}
	assert.Equal(t, http.StatusConflict, again.status)
	assert.Equal(t, keyHeld, again.problem(t).KeyState)
	assert.Empty(t, retries, "a held key's 409 is returned, not waited out")
	assert.Equal(t, int64(1), charges.Load())
}

// A panic follows OnServerError as the handler's 500 would: released, a
// retry runs the handler again.
func TestPanicFollowsOnServerError(t *testing.T) {
	var runs atomic.Int64
	srv, _ := panicServer(t, once.New(nil), Config{OnServerError: ReleaseOn(http.StatusInternalServerError)},
		func(w http.ResponseWriter, r *http.Request) {
			if runs.Add(1) == 1 {
				panic("boom")
			}
			w.WriteHeader(http.StatusCreated)
		})
	first := call(t, srv, "POST", "/", "", "k", "x")
	assert.Equal(t, http.StatusInternalServerError, first.status)
	second := call(t, srv, "POST", "/", "", "k", "x")
	assert.Equal(t, http.StatusCreated, second.status)
	assert.Equal(t, int64(2), runs.Load())
}

// A handler that panics with http.ErrAbortHandler, or panics after its
// response started streaming, gets the connection aborted, as net/http
// does: the client must not take a partial response for a whole one. The
// key is held all the same: the Transport's retry of the aborted attempt
// is answered 409 request-outcome-unknown and returned, and a streamed
// response is cut short, never run again.
func TestPanicThatAbortsTheConnectionHoldsTheKey(t *testing.T) {
	t.Run("ErrAbortHandler", func(t *testing.T) {
		var runs atomic.Int64
		srv, logs := panicServer(t, once.New(nil), Config{}, func(w http.ResponseWriter, r *http.Request) {
			runs.Add(1)
			panic(http.ErrAbortHandler)
		})
		var retries []Retry
		c := NewClient(&Transport{
			Base:      &http.Transport{DisableKeepAlives: true},
			BaseDelay: time.Millisecond,
			OnRetry:   func(r Retry) { retries = append(retries, r) },
		})
		req, err := http.NewRequest("POST", srv.URL, strings.NewReader("x"))
		require.NoError(t, err)
		resp, err := c.Do(req)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		resp.Body.Close()
		r := reply{status: resp.StatusCode, header: resp.Header, body: string(body)}
		assert.Equal(t, http.StatusConflict, r.status)
		assert.Equal(t, keyHeld, r.problem(t).KeyState)
		require.Len(t, retries, 1, "the aborted attempt is retried once")
		assert.Error(t, retries[0].Err)
		assert.Equal(t, int64(1), runs.Load())
		assert.Empty(t, logs.String(), "ErrAbortHandler is not logged, as in net/http")
	})
	t.Run("after streaming", func(t *testing.T) {
		var runs atomic.Int64
		srv, logs := panicServer(t, once.New(nil), Config{MaxStoredBody: 16}, func(w http.ResponseWriter, r *http.Request) {
			runs.Add(1)
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(make([]byte, 64)) // over MaxStoredBody: streamed
			_ = http.NewResponseController(w).Flush()
			panic("late")
		})
		c := NewClient(&Transport{Base: &http.Transport{DisableKeepAlives: true}, BaseDelay: time.Millisecond})
		req, err := http.NewRequestWithContext(WithKey(context.Background(), "s1"), "POST", srv.URL, strings.NewReader("x"))
		require.NoError(t, err)
		resp, err := c.Do(req)
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		_, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Error(t, err, "the response is cut short, not ended as if whole")
		assert.Contains(t, logs.String(), "late")

		second := call(t, srv, "POST", "/", "", "s1", "x")
		assert.Equal(t, http.StatusConflict, second.status)
		assert.Equal(t, keyHeld, second.problem(t).KeyState)
		assert.Equal(t, int64(1), runs.Load())
	})
}

// endTracer records the end of every call.
type endTracer struct {
	mu   sync.Mutex
	ends []once.Event
}

func (t *endTracer) TraceDoStart(ctx context.Context, _ once.Event) context.Context {
	return ctx
}

func (t *endTracer) TraceDoEnd(_ context.Context, d once.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.ends = append(t.ends, d)
}

// A handler's panic, which the middleware recovers to hold the key, is a
// panic to the core's tracer (Panicked on its once.EventDoEnd) and observers (a
// *once.PanicError with the value in the executed event's FnErr), as a
// panic of fn is: onceotel records it as OutcomePanic, not a held call.
// What is stored (the held record's code and message) and answered is
// that of any 500, whatever the panic value; a handler's own 500 is not a
// panic.
func TestPanicIsTracedAsAPanic(t *testing.T) {
	store := memory.New(nil)
	tr := &endTracer{}
	var mu sync.Mutex
	var executed []once.Event
	k := once.New(store, once.WithTracer(tr), once.WithObserver(func(_ context.Context, e once.Event) {
		if e.Kind == once.EventExecuted {
			mu.Lock()
			executed = append(executed, e)
			mu.Unlock()
		}
	}))
	srv, _ := panicServer(t, k, Config{}, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/panic":
			panic(codedPanic{})
		case "/500":
			http.Error(w, "failed", http.StatusInternalServerError)
		}
	})
	first := call(t, srv, "POST", "/panic", "", "p", "x")
	assert.Equal(t, http.StatusInternalServerError, first.status)
	assert.Equal(t, DefaultProblemBase+"request-failed", first.problem(t).Type)
	own := call(t, srv, "POST", "/500", "", "e", "x")
	assert.Equal(t, http.StatusInternalServerError, own.status)

	require.Len(t, tr.ends, 2)
	assert.True(t, tr.ends[0].Panicked, "the handler panicked")
	var pe *once.PanicError
	require.ErrorAs(t, tr.ends[0].Err, &pe)
	assert.Equal(t, codedPanic{}, pe.Value)
	assert.NotEmpty(t, pe.Stack)
	assert.False(t, tr.ends[1].Panicked, "a handler's own 500 is no panic")
	assert.NotErrorAs(t, tr.ends[1].Err, &pe)

	mu.Lock()
	require.Len(t, executed, 2)
	assert.ErrorAs(t, executed[0].FnErr, &pe)
	assert.Equal(t, once.ClassHold, executed[0].Class)
	mu.Unlock()

	for _, key := range []string{"p", "e"} {
		rec, err := store.Get(context.Background(), "u", key)
		require.NoError(t, err)
		require.NotZero(t, rec.State, key)
		assert.Equal(t, backends.StateHeld, rec.State, key)
		assert.Empty(t, rec.Held.Code, "%s: the panic value's code is not the held record's", key)
		assert.Equal(t, "oncehttp: handler answered 500", rec.Held.Message, key)
	}
}

// codedPanic is a panic value with an error code.
type codedPanic struct{}

func (codedPanic) Error() string     { return "coded panic" }
func (codedPanic) ErrorCode() string { return "coded" }
