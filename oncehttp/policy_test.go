package oncehttp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/internal/testservers"
)

// noRedirects is a real client that shows 3xx answers instead of following
// them.
func noRedirects(srv *httptest.Server) *http.Client {
	c := *srv.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}

// send is call with a chosen client and extra request headers.
func send(t *testing.T, c *http.Client, srv *httptest.Server, path, key, body string) reply {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("X-User", "buyer")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return reply{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

// statusServer answers POST /status/{code} with that code, and counts the
// runs per code. ?skip=1 and ?force=1 call SkipStore and ForceStore.
func statusServer(t *testing.T, k *once.Keeper, cfg Config) (*httptest.Server, *sync.Map) {
	t.Helper()
	var runs sync.Map // code → *atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/status/"))
		require.NoError(t, err)
		n, _ := runs.LoadOrStore(r.URL.String(), new(atomic.Int64))
		run := n.(*atomic.Int64).Add(1)
		if r.URL.Query().Get("skip") == "1" {
			require.True(t, SkipStore(r.Context()))
		}
		if r.URL.Query().Get("force") == "1" {
			require.True(t, ForceStore(r.Context()))
		}
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(code)
		if bodyAllowed(code) {
			_, _ = fmt.Fprintf(w, "run %d", run)
		}
	})
	if cfg.Scope == nil {
		cfg.Scope = userScope
	}
	m, err := New(k, cfg)
	require.NoError(t, err)
	srv := httptest.NewServer(m.Handler(h))
	t.Cleanup(srv.Close)
	return srv, &runs
}

// onEveryStore runs f on memory, PostgreSQL and Redis, with a Keeper
// factory over a fresh store of each.
func onEveryStore(t *testing.T, f func(t *testing.T, keeper func(...once.Option) *once.Keeper)) {
	for name, newStore := range testservers.Stores() {
		t.Run(name, func(t *testing.T) {
			store := newStore(t)
			f(t, func(opts ...once.Option) *once.Keeper { return once.New(store, opts...) })
		})
	}
}

// TestStoragePolicyPerStatus: what a retry with the same key receives after
// each status, with the default policy: the stored answer (the handler ran
// once) or a fresh run.
func TestStoragePolicyPerStatus(t *testing.T) {
	stored := map[int]bool{
		200: true, 201: true, 202: true, 204: true, 303: true,
		401: true, 402: true, 403: true, 404: true, 409: true, 410: true, 412: true,
		400: false, 422: false, // validation: the endpoint did not start
		408: false, 425: false, 429: false, // transient
		500: false, 503: false, // never (released here, see OnServerError)
	}
	onEveryStore(t, func(t *testing.T, keeper func(...once.Option) *once.Keeper) {
		srv, runs := statusServer(t, keeper(), Config{OnServerError: ReleaseOn(500, 503)})
		c := noRedirects(srv)
		for code, want := range stored {
			t.Run(strconv.Itoa(code), func(t *testing.T) {
				key := newKey(t)
				path := "/status/" + strconv.Itoa(code)
				first := send(t, c, srv, path, key, "")
				second := send(t, c, srv, path, key, "")
				require.Equal(t, code, first.status)
				require.Equal(t, code, second.status)
				n, _ := runs.Load(path)
				if want {
					assert.Equal(t, "true", second.header.Get(ReplayedHeader))
					assert.Equal(t, first.body, second.body)
					assert.Equal(t, int64(1), n.(*atomic.Int64).Load(), "stored: the handler ran once")
				} else {
					assert.Empty(t, second.header.Get(ReplayedHeader))
					assert.Equal(t, int64(2), n.(*atomic.Int64).Load(), "not stored: the retry ran the handler again")
				}
				runs.Delete(path) // keys are fresh per case; counts too
			})
		}
	})
}

// TestHandlerOverridesStorage: SkipStore releases a 201, ForceStore keeps
// a 422, and a custom StoreStatus replaces the table; ForceStore cannot
// store a 5xx.
func TestHandlerOverridesStorage(t *testing.T) {
	srv, runs := statusServer(t, once.New(nil), Config{})
	count := func(path string) int64 {
		n, ok := runs.Load(path)
		require.True(t, ok, path)
		return n.(*atomic.Int64).Load()
	}
	k := newKey(t)
	send(t, srv.Client(), srv, "/status/201?skip=1", k, "")
	second := send(t, srv.Client(), srv, "/status/201?skip=1", k, "")
	assert.Equal(t, "run 2", second.body, "SkipStore: the next request runs again")
	assert.Equal(t, int64(2), count("/status/201?skip=1"))

	k = newKey(t)
	send(t, srv.Client(), srv, "/status/422?force=1", k, "")
	second = send(t, srv.Client(), srv, "/status/422?force=1", k, "")
	assert.Equal(t, "true", second.header.Get(ReplayedHeader), "ForceStore: the 422 is replayed")
	assert.Equal(t, int64(1), count("/status/422?force=1"))

	k = newKey(t)
	send(t, srv.Client(), srv, "/status/504?force=1", k, "")
	second = send(t, srv.Client(), srv, "/status/504?force=1", k, "")
	assert.Equal(t, http.StatusConflict, second.status, "a 5xx is held, never stored")

	custom, runs2 := statusServer(t, once.New(nil), Config{StoreStatus: func(int) bool { return true }})
	k = newKey(t)
	send(t, custom.Client(), custom, "/status/429", k, "")
	second = send(t, custom.Client(), custom, "/status/429", k, "")
	assert.Equal(t, "true", second.header.Get(ReplayedHeader), "a custom policy stores 429")
	n, _ := runs2.Load("/status/429")
	assert.Equal(t, int64(1), n.(*atomic.Int64).Load())

	// Outside a guarded request the markers report false.
	assert.False(t, SkipStore(context.Background()))
	assert.False(t, ForceStore(context.Background()))
}

// TestValidation400IsNotStored is the case: a 400 from the
// handler's validation, then the corrected body with the same key, runs.
func TestValidation400IsNotStored(t *testing.T) {
	var created atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct{ Amount int }
		if json.NewDecoder(r.Body).Decode(&in) != nil || in.Amount <= 0 {
			http.Error(w, "amount must be positive", http.StatusBadRequest)
			return
		}
		created.Add(1)
		w.WriteHeader(http.StatusCreated)
	})
	m, err := New(once.New(nil), Config{Scope: userScope})
	require.NoError(t, err)
	srv := httptest.NewServer(m.Handler(h))
	defer srv.Close()
	key := newKey(t)
	assert.Equal(t, http.StatusBadRequest, send(t, srv.Client(), srv, "/", key, `{"Amount":0}`).status)
	assert.Equal(t, http.StatusCreated, send(t, srv.Client(), srv, "/", key, `{"Amount":5}`).status)
	replay := send(t, srv.Client(), srv, "/", key, `{"Amount":5}`)
	assert.Equal(t, http.StatusCreated, replay.status)
	assert.Equal(t, "true", replay.header.Get(ReplayedHeader))
	assert.Equal(t, int64(1), created.Load())
}

// TestFingerprintCoversTheQuery: ?status=202 with the key of ?status=201
// is another request (422); the same query in another order is the same.
func TestFingerprintCoversTheQuery(t *testing.T) {
	onEveryStore(t, func(t *testing.T, keeper func(...once.Option) *once.Keeper) {
		srv, _ := statusServer(t, keeper(), Config{})
		key := newKey(t)
		assert.Equal(t, http.StatusCreated, send(t, srv.Client(), srv, "/status/201?a=1&b=2", key, "").status)
		r := send(t, srv.Client(), srv, "/status/201?a=1&b=3", key, "")
		assert.Equal(t, http.StatusUnprocessableEntity, r.status)
		assert.Equal(t, reusedType, r.problem(t).Type)
		r = send(t, srv.Client(), srv, "/status/201?b=2&a=1", key, "")
		assert.Equal(t, "true", r.header.Get(ReplayedHeader), "a reordered query is the same request")
	})
}

// TestOversizedResponse: a response over MaxStoredBody that names its
// result is replayed as 303 to it, with the original status; a client that
// follows redirects gets the resource; one that names nothing gets 500
// with the original status. The handler never runs twice.
func TestOversizedResponse(t *testing.T) {
	onEveryStore(t, func(t *testing.T, keeper func(...once.Option) *once.Keeper) {
		var creates atomic.Int64
		big := strings.Repeat("x", 4096)
		mux := http.NewServeMux()
		mux.HandleFunc("POST /exports", func(w http.ResponseWriter, r *http.Request) {
			n := creates.Add(1)
			w.Header().Set("Location", fmt.Sprintf("/exports/%d", n))
			w.Header().Set("Content-Type", "text/csv")
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, big)
		})
		mux.HandleFunc("POST /anonymous", func(w http.ResponseWriter, r *http.Request) {
			creates.Add(1)
			w.WriteHeader(http.StatusOK)
			_, _ = io.WriteString(w, big)
		})
		mux.HandleFunc("GET /exports/{id}", func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, "export "+r.PathValue("id"))
		})
		m, err := New(keeper(), Config{Scope: userScope, MaxStoredBody: 1024})
		require.NoError(t, err)
		srv := httptest.NewServer(m.Handler(mux))
		defer srv.Close()

		key := newKey(t)
		first := send(t, srv.Client(), srv, "/exports", key, "")
		require.Equal(t, http.StatusCreated, first.status)
		assert.Equal(t, big, first.body, "the first client gets the whole body")

		retry := send(t, noRedirects(srv), srv, "/exports", key, "")
		assert.Equal(t, http.StatusSeeOther, retry.status)
		assert.Equal(t, "/exports/1", retry.header.Get("Location"))
		assert.Equal(t, "true", retry.header.Get(ReplayedHeader))
		p := retry.problem(t)
		assert.Equal(t, DefaultProblemBase+"response-too-large", p.Type)
		assert.Equal(t, http.StatusCreated, p.OriginalStatus)
		assert.Equal(t, "/exports/1", p.Location)

		followed := send(t, srv.Client(), srv, "/exports", key, "")
		assert.Equal(t, http.StatusOK, followed.status)
		assert.Equal(t, "export 1", followed.body, "a client that follows 303 gets the result")

		key = newKey(t)
		require.Equal(t, http.StatusOK, send(t, srv.Client(), srv, "/anonymous", key, "").status)
		retry = send(t, srv.Client(), srv, "/anonymous", key, "")
		assert.Equal(t, http.StatusInternalServerError, retry.status)
		p = retry.problem(t)
		assert.Equal(t, DefaultProblemBase+"response-unavailable", p.Type)
		assert.Equal(t, http.StatusOK, p.OriginalStatus)
		assert.Equal(t, int64(2), creates.Load(), "each handler ran once")
	})
}

// TestRetryAfterIsTheHoldLeft: a held 5xx answers duplicates with the time
// left on its hold, which shrinks as the lease runs out.
func TestRetryAfterIsTheHoldLeft(t *testing.T) {
	s := newShop()
	srv := serve(t, once.New(nil), Config{Options: []once.Option{once.WithLease(3 * time.Second)}}, s)
	key := newKey(t)
	require.Equal(t, http.StatusGatewayTimeout, call(t, srv, "POST", "/timeout", "buyer", key, "").status)
	r := call(t, srv, "POST", "/timeout", "buyer", key, "")
	require.Equal(t, http.StatusConflict, r.status)
	assertRetryAfter(t, r, 2, 3)
	eventually(t, 5*time.Second, func() bool {
		r := call(t, srv, "POST", "/timeout", "buyer", key, "")
		return r.status == http.StatusConflict && r.header.Get("Retry-After") == "1"
	})
	assert.Equal(t, int64(1), s.timeouts.Load())
}

// TestHandlerSeesItsKey: the context accessors inside a guarded handler,
// and FirstExecution false after a takeover of a held key.
func TestHandlerSeesItsKey(t *testing.T) {
	onEveryStore(t, func(t *testing.T, keeper func(...once.Option) *once.Keeper) {
		type seen struct {
			Key, Scope string
			First      bool
		}
		var fail atomic.Bool
		fail.Store(true)
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			key, ok := Key(r.Context())
			require.True(t, ok)
			scope, ok := ScopeName(r.Context())
			require.True(t, ok)
			if fail.Swap(false) {
				w.WriteHeader(http.StatusBadGateway) // held until the lease ends
				return
			}
			_ = json.NewEncoder(w).Encode(seen{key, scope, FirstExecution(r.Context())})
		})
		m, err := New(keeper(once.WithLease(200*time.Millisecond)), Config{Scope: userScope})
		require.NoError(t, err)
		srv := httptest.NewServer(m.Handler(h))
		defer srv.Close()
		key := newKey(t)
		require.Equal(t, http.StatusBadGateway, send(t, srv.Client(), srv, "/", key, "").status)
		var r reply
		eventually(t, 5*time.Second, func() bool {
			r = send(t, srv.Client(), srv, "/", key, "")
			return r.status == http.StatusOK
		})
		var got seen
		require.NoError(t, json.Unmarshal([]byte(r.body), &got))
		assert.Equal(t, seen{key, "buyer", false}, got, "a takeover is not the first execution")

		key2 := newKey(t)
		r = send(t, srv.Client(), srv, "/", key2, "")
		require.NoError(t, json.Unmarshal([]byte(r.body), &got))
		assert.Equal(t, seen{key2, "buyer", true}, got)

		_, ok := Key(context.Background())
		assert.False(t, ok)
		assert.False(t, FirstExecution(context.Background()))
	})
}

// TestValidateKeyHook: a key outside the resource's format is 400 and the
// handler does not run.
func TestValidateKeyHook(t *testing.T) {
	s := newShop()
	srv := serve(t, once.New(nil), Config{ValidateKey: func(k string) error {
		if !strings.HasPrefix(k, "ord_") {
			return fmt.Errorf("want ord_ prefix")
		}
		return nil
	}}, s)
	r := call(t, srv, "POST", "/orders", "buyer", "abc", "{}")
	assert.Equal(t, http.StatusBadRequest, r.status)
	assert.Equal(t, DefaultProblemBase+"idempotency-key-invalid", r.problem(t).Type)
	assert.NotContains(t, r.body, "ord_ prefix", "the hook's error text is not sent")
	assert.Equal(t, http.StatusCreated, call(t, srv, "POST", "/orders", "buyer", "ord_"+newKey(t), "{}").status)
	assert.Equal(t, int64(1), s.orders.Load())
}

// TestWriteErrorForNestedDo: a handler's own once.Do under a derived key
// answers 409 while that key is busy, without storing the 409, so the
// client's retry (same outer key) runs the handler again and succeeds.
func TestWriteErrorForNestedDo(t *testing.T) {
	k := once.New(nil)
	provider := k.Scope("provider")
	busy := make(chan struct{})
	started := make(chan struct{})
	var charges atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, _ := Key(r.Context())
		scope, _ := ScopeName(r.Context())
		id, err := once.Do(r.Context(), provider, once.DerivedKey("charge", scope+"/"+key), nil,
			func(context.Context) (int64, error) { return charges.Add(1), nil })
		if WriteError(w, r, err) {
			return
		}
		require.NoError(t, err)
		_, _ = fmt.Fprintf(w, "charge %d", id)
	})
	m, err := New(k, Config{Scope: userScope})
	require.NoError(t, err)
	srv := httptest.NewServer(m.Handler(h))
	defer srv.Close()

	key := newKey(t)
	derived := once.DerivedKey("charge", "buyer/"+key)
	go func() { // another worker holds the derived key for a while
		_, _ = once.Do(context.Background(), provider, derived, nil, func(context.Context) (int64, error) {
			close(started)
			<-busy
			return charges.Add(1), nil
		})
	}()
	<-started
	r := send(t, srv.Client(), srv, "/", key, "")
	assert.Equal(t, http.StatusConflict, r.status)
	assert.Equal(t, inProgressType, r.problem(t).Type)
	assert.Equal(t, "1", r.header.Get("Retry-After"), "the core's hint, not the 30 s lease left")
	close(busy)
	eventually(t, 5*time.Second, func() bool {
		r = send(t, srv.Client(), srv, "/", key, "")
		return r.status == http.StatusOK
	})
	assert.Equal(t, "charge 1", r.body, "the retry got the nested call's stored outcome")
	assert.Equal(t, int64(1), charges.Load())

	reused := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/", nil)
	assert.True(t, WriteError(reused, req, once.ErrKeyReused))
	assert.Equal(t, http.StatusUnprocessableEntity, reused.Code)
	unavailable := httptest.NewRecorder()
	assert.True(t, WriteError(unavailable, req, &once.StoreError{Op: "claim", Err: io.EOF}))
	assert.Equal(t, http.StatusServiceUnavailable, unavailable.Code)
	assert.Equal(t, "1", unavailable.Header().Get("Retry-After"))
	held := httptest.NewRecorder()
	assert.True(t, WriteError(held, req, &once.InProgressError{Held: true, RetryAfter: 5 * time.Second, HoldRemaining: 5 * time.Second}))
	assert.Equal(t, http.StatusConflict, held.Code)
	assert.Equal(t, "5", held.Header().Get("Retry-After"), "the hold left")
	assert.Contains(t, held.Body.String(), `"type":"`+heldType+`"`)
	assert.Contains(t, held.Body.String(), `"key_state":"held"`)
	invalid := httptest.NewRecorder()
	assert.True(t, WriteError(invalid, req, &once.InvalidInputError{Field: "key", Reason: "empty"}))
	assert.Equal(t, http.StatusBadRequest, invalid.Code)
	assert.False(t, WriteError(httptest.NewRecorder(), req, io.EOF), "fn's own errors are the handler's")
	assert.False(t, WriteError(httptest.NewRecorder(), req, nil))
}

// TestRetryAfterWithAnEndlessLease: a key held under the longest lease
// (a hold of one lease, which no wait ends) is answered without a
// Retry-After, never with a short value wrapped from it.
func TestRetryAfterWithAnEndlessLease(t *testing.T) {
	s := newShop()
	srv := serve(t, once.New(nil, once.WithLease(math.MaxInt64)), Config{}, s)
	key := newKey(t)
	require.Equal(t, http.StatusGatewayTimeout, call(t, srv, "POST", "/timeout", "buyer", key, "").status)
	r := call(t, srv, "POST", "/timeout", "buyer", key, "")
	require.Equal(t, http.StatusConflict, r.status)
	require.Equal(t, keyHeld, r.problem(t).KeyState)
	require.NotContains(t, r.header, "Retry-After")
}
