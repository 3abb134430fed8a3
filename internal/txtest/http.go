package txtest

import (
	"context"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends/backendtest"
	"github.com/stagedoor/once/oncehttp"
)

// RunHTTP runs the cases of oncehttp.HandlerTx on the stores newStore
// returns: a handler's row and its stored response commit together or
// not at all, over HTTP. Each case has a store of its own. The handler
// writes one effect for the request's key through the transaction, then
// answers as the request's path says: /ok 201, /reject 400, /unavailable
// 503, /panic panics, /kill kills the transaction's connection (Kill) and
// answers 201.
func RunHTTP[X once.Tx](t *testing.T, newStore func(t *testing.T) Store[X]) {
	t.Run("RowAndResponseCommitTogether", func(t *testing.T) {
		s := newStore(t)
		h := newHTTPServer(t, s)
		first := h.post(t, "/ok", "k", "{}")
		require.Equal(t, http.StatusCreated, first.status, first.body)
		require.Empty(t, first.header.Get(oncehttp.ReplayedHeader))
		require.Equal(t, 1, s.Count(t, "k"), "the row committed with the response")

		again := h.post(t, "/ok", "k", "{}")
		require.Equal(t, http.StatusCreated, again.status, again.body)
		require.Equal(t, "true", again.header.Get(oncehttp.ReplayedHeader))
		require.Equal(t, first.body, again.body)
		require.Equal(t, http.StatusUnprocessableEntity, h.post(t, "/ok", "k", `{"other": 1}`).status)
		require.Equal(t, http.StatusBadRequest, h.post(t, "/ok", "", "{}").status)
		require.Equal(t, 1, s.Count(t, "k"))
		require.EqualValues(t, 1, h.runs.Load(), "only the first request ran the handler")
	})

	t.Run("ExactlyOnceUnderConcurrentDuplicates", func(t *testing.T) {
		s := newStore(t)
		h := newHTTPServer(t, s)
		h.delay = 20 * time.Millisecond // widen the window for duplicates
		var created, replayed, inProgress atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range s.Duplicates {
			wg.Go(func() {
				<-start
				r, err := h.send(context.Background(), "/ok", "k", "{}")
				switch {
				case err != nil:
					t.Error(err)
				case r.status == http.StatusCreated && r.header.Get(oncehttp.ReplayedHeader) == "true":
					replayed.Add(1)
				case r.status == http.StatusCreated:
					created.Add(1)
				case r.status == http.StatusConflict && r.header.Get("Retry-After") != "":
					inProgress.Add(1)
				default:
					t.Errorf("unexpected answer %d: %s", r.status, r.body)
				}
			})
		}
		close(start)
		wg.Wait()
		require.Equal(t, 1, s.Count(t, "k"), "exactly one row")
		require.EqualValues(t, 1, h.runs.Load(), "the handler ran once")
		require.EqualValues(t, 1, created.Load())
		require.EqualValues(t, s.Duplicates-1, replayed.Load()+inProgress.Load(), "every other request replayed or was told in progress")
	})

	t.Run("UnstoredAnswerRollsTheRowBack", func(t *testing.T) {
		s := newStore(t)
		h := newHTTPServer(t, s)
		for _, path := range []string{"/reject", "/unavailable"} {
			key := strings.TrimPrefix(path, "/")
			r := h.post(t, path, key, "{}")
			require.Contains(t, []int{http.StatusBadRequest, http.StatusServiceUnavailable}, r.status)
			require.Equal(t, "answer "+key, r.body, "the handler's answer, as written")
			require.Zero(t, s.Count(t, key), "no row without a stored response")
			ok := h.post(t, "/ok", key, "{}")
			require.Equal(t, http.StatusCreated, ok.status, "the key was released: %s", ok.body)
			require.Empty(t, ok.header.Get(oncehttp.ReplayedHeader))
			require.Equal(t, 1, s.Count(t, key))
		}
	})

	t.Run("PanicLeavesNoRowAndHoldsTheKey", func(t *testing.T) {
		s := newStore(t)
		h := newHTTPServer(t, s)
		r := h.post(t, "/panic", "k", "{}")
		require.Equal(t, http.StatusInternalServerError, r.status, r.body)
		require.Zero(t, s.Count(t, "k"), "the row rolled back")
		held := h.post(t, "/panic", "k", "{}")
		require.Equal(t, http.StatusConflict, held.status, "the key was committed held: %s", held.body)
		require.Contains(t, held.body, "request-outcome-unknown")
		require.EqualValues(t, 1, h.runs.Load())
	})

	t.Run("KilledConnectionLeavesNeitherRowNorResponse", func(t *testing.T) {
		s := newStore(t)
		if s.Kill == nil {
			t.Skip("the store has no connection to kill")
		}
		h := newHTTPServer(t, s)
		r := h.post(t, "/kill", "k", "{}")
		require.Equal(t, http.StatusServiceUnavailable, r.status, "the handler's 201 did not commit: %s", r.body)
		require.Contains(t, r.body, "store-unavailable")
		require.Empty(t, r.header.Get("Location"), "nothing of the uncommitted response is sent")
		require.Zero(t, s.Count(t, "k"), "no row")

		again := h.post(t, "/kill", "k", "{}")
		require.Equal(t, http.StatusCreated, again.status, "no stored response: the handler runs again at once: %s", again.body)
		require.Empty(t, again.header.Get(oncehttp.ReplayedHeader))
		require.Equal(t, 1, s.Count(t, "k"))
	})
}

// httpServer serves a HandlerTx over one store under test.
type httpServer[X once.Tx] struct {
	srv   *httptest.Server
	runs  atomic.Int32
	delay time.Duration
	kills atomic.Int32
}

func newHTTPServer[X once.Tx](t *testing.T, s Store[X]) *httpServer[X] {
	h := &httpServer[X]{}
	scope := backendtest.Scope(t)
	m, err := oncehttp.New(once.New(s.Store), oncehttp.Config{
		Scope:  func(*http.Request) (string, error) { return scope, nil },
		Logger: slog.New(slog.DiscardHandler), // oncehttp's tests check the lines
	})
	require.NoError(t, err)
	handler := oncehttp.HandlerTx(m, s.Begin, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.runs.Add(1)
		ctx := r.Context()
		tx, ok := oncehttp.Tx[X](ctx)
		key, _ := oncehttp.Key(ctx)
		if !ok {
			t.Error("no transaction in the handler's context")
		}
		if err := s.Effect(ctx, tx, key); err != nil {
			t.Errorf("effect: %v", err)
		}
		time.Sleep(h.delay)
		w.Header().Set("Location", "/orders/"+key)
		switch r.URL.Path {
		case "/reject":
			w.WriteHeader(http.StatusBadRequest)
		case "/unavailable":
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/panic":
			panic("crash after the write")
		case "/kill":
			if h.kills.Add(1) == 1 {
				s.Kill(t, tx)
			}
			w.WriteHeader(http.StatusCreated)
		default:
			w.WriteHeader(http.StatusCreated)
		}
		_, _ = io.WriteString(w, "answer "+key)
	}))
	h.srv = httptest.NewUnstartedServer(handler)
	h.srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the panic's stack
	h.srv.Start()
	t.Cleanup(h.srv.Close)
	return h
}

type httpReply struct {
	status int
	header http.Header
	body   string
}

// send POSTs body to path with the Idempotency-Key key ("" sends none).
func (h *httpServer[X]) send(ctx context.Context, path, key, body string) (httpReply, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.srv.URL+path, strings.NewReader(body))
	if err != nil {
		return httpReply{}, err
	}
	if key != "" {
		req.Header.Set(oncehttp.DefaultHeader, key)
	}
	resp, err := h.srv.Client().Do(req)
	if err != nil {
		return httpReply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return httpReply{resp.StatusCode, resp.Header, string(b)}, err
}

func (h *httpServer[X]) post(t *testing.T, path, key, body string) httpReply {
	t.Helper()
	r, err := h.send(context.Background(), path, key, body)
	require.NoError(t, err)
	return r
}
