package oncehttp

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
)

const (
	reusedType     = "https://stagedoor.example/problems/idempotency-key-reused"
	inProgressType = "https://stagedoor.example/problems/request-in-progress"
	heldType       = "https://stagedoor.example/problems/request-outcome-unknown"
	failedType     = "https://stagedoor.example/problems/request-failed"
)

// TestScenarioMemory runs the seed's scenario against the in-memory store.
func TestScenarioMemory(t *testing.T) {
	runScenario(t, once.New(nil))
}

// runScenario is the seed's scenario, parameterised by the Keeper so that
// it runs unchanged against every store (memory here; Postgres and Redis
// from their own tests). Keys are unique per run.
func runScenario(t *testing.T, k *once.Keeper) {
	const order = `{"hold_ids": [88211, 88212], "payment_method": "pm_4Yc"}`
	s := newShop()
	srv := serve(t, k, Config{MaxBody: 4 << 10}, s)

	t.Run("same POST twice is one order and a replayed 201", func(t *testing.T) {
		key := newKey(t)
		before := s.orders.Load()
		first := call(t, srv, "POST", "/orders", "buyer", key, order)
		second := call(t, srv, "POST", "/orders", "buyer", key, order)

		assert.Equal(t, before+1, s.orders.Load(), "the handler ran once")
		require.Equal(t, http.StatusCreated, first.status)
		assert.Empty(t, first.header.Get(ReplayedHeader))
		assert.Equal(t, http.StatusCreated, second.status)
		assert.Equal(t, first.body, second.body)
		assert.NotEmpty(t, first.header.Get("Location"))
		assert.Equal(t, first.header.Get("Location"), second.header.Get("Location"))
		assert.Equal(t, first.header.Get("Content-Type"), second.header.Get("Content-Type"))
		assert.Equal(t, "true", second.header.Get(ReplayedHeader))

		// Set-Cookie and headers outside the allow-list reach the first
		// client only.
		assert.NotEmpty(t, first.header.Get("Set-Cookie"))
		assert.Equal(t, "1", first.header.Get("X-Not-Stored"))
		assert.Empty(t, second.header.Values("Set-Cookie"))
		assert.Empty(t, second.header.Get("X-Not-Stored"))
	})

	t.Run("same key with another body is 422", func(t *testing.T) {
		key := newKey(t)
		require.Equal(t, http.StatusCreated, call(t, srv, "POST", "/orders", "buyer", key, order).status)
		before := s.orders.Load()
		r := call(t, srv, "POST", "/orders", "buyer", key, strings.Replace(order, "88212", "88213", 1))
		assert.Equal(t, http.StatusUnprocessableEntity, r.status)
		assert.Equal(t, reusedType, r.problem(t).Type)
		assert.NotContains(t, r.body, "88211", "never the stored response")
		assert.Equal(t, before, s.orders.Load())
	})

	t.Run("same key on another path is 422", func(t *testing.T) {
		key := newKey(t)
		require.Equal(t, http.StatusCreated, call(t, srv, "POST", "/orders", "buyer", key, order).status)
		r := call(t, srv, "POST", "/charges", "buyer", key, order)
		assert.Equal(t, http.StatusUnprocessableEntity, r.status)
		assert.Equal(t, reusedType, r.problem(t).Type)
	})

	t.Run("a duplicate while the first runs is 409 with Retry-After the core's hint", func(t *testing.T) {
		key := newKey(t)
		var first reply
		var wg sync.WaitGroup
		wg.Go(func() { first = call(t, srv, "POST", "/slow", "buyer", key, order) })
		<-s.slowStarted

		r := call(t, srv, "POST", "/slow", "buyer", key, order)
		assert.Equal(t, http.StatusConflict, r.status)
		assert.Equal(t, "1", r.header.Get("Retry-After"),
			"the owner usually answers sooner than its lease: once's hint, not the 30 s lease left")
		p := r.problem(t)
		assert.Equal(t, inProgressType, p.Type)
		assert.Equal(t, keyRunning, p.KeyState)

		s.slowRelease <- struct{}{}
		wg.Wait()
		assert.Equal(t, http.StatusCreated, first.status)
		third := call(t, srv, "POST", "/slow", "buyer", key, order)
		assert.Equal(t, http.StatusCreated, third.status)
		assert.Equal(t, "slow done", third.body)
		assert.Equal(t, "true", third.header.Get(ReplayedHeader))
		assert.Equal(t, int64(1), s.slow.Load())
	})

	t.Run("a 402 decline is replayed as the same 402", func(t *testing.T) {
		key := newKey(t)
		before := s.charges.Load()
		first := call(t, srv, "POST", "/charges", "buyer", key, order)
		second := call(t, srv, "POST", "/charges", "buyer", key, order)
		assert.Equal(t, before+1, s.charges.Load())
		assert.Equal(t, http.StatusPaymentRequired, first.status)
		assert.Equal(t, http.StatusPaymentRequired, second.status)
		assert.Equal(t, first.body, second.body)
		assert.Equal(t, "application/problem+json", second.header.Get("Content-Type"))
		assert.Equal(t, "true", second.header.Get(ReplayedHeader))
	})

	t.Run("a 504 is not stored and the key is held", func(t *testing.T) {
		key := newKey(t)
		before := s.timeouts.Load()
		first := call(t, srv, "POST", "/timeout", "buyer", key, order)
		assert.Equal(t, http.StatusGatewayTimeout, first.status)
		assert.Contains(t, first.body, "payrail timed out", "the first client gets the handler's 5xx")
		second := call(t, srv, "POST", "/timeout", "buyer", key, order)
		assert.Equal(t, http.StatusConflict, second.status)
		assertRetryAfter(t, second, 28, 30)
		p := second.problem(t)
		assert.Equal(t, heldType, p.Type, "a held key's 409 is told from a running one")
		assert.Equal(t, keyHeld, p.KeyState)
		assert.Equal(t, before+1, s.timeouts.Load())
	})

	t.Run("a 503 is released: the retry runs the handler again", func(t *testing.T) {
		key := newKey(t)
		first := call(t, srv, "POST", "/breaker", "buyer", key, order)
		assert.Equal(t, http.StatusServiceUnavailable, first.status)
		second := call(t, srv, "POST", "/breaker", "buyer", key, order)
		assert.Equal(t, http.StatusCreated, second.status)
		assert.Empty(t, second.header.Get(ReplayedHeader))
		third := call(t, srv, "POST", "/breaker", "buyer", key, order)
		assert.Equal(t, http.StatusCreated, third.status)
		assert.Equal(t, "true", third.header.Get(ReplayedHeader))
		assert.Equal(t, int64(2), s.breakers.Load())
	})

	t.Run("another user's key is a key nobody has seen", func(t *testing.T) {
		key := newKey(t)
		before := s.orders.Load()
		a := call(t, srv, "POST", "/orders", "alice", key, order)
		b := call(t, srv, "POST", "/orders", "bob", key, order)
		assert.Equal(t, before+2, s.orders.Load())
		assert.Equal(t, http.StatusCreated, b.status)
		assert.Empty(t, b.header.Get(ReplayedHeader))
		assert.NotEqual(t, a.header.Get("Location"), b.header.Get("Location"))
	})

	t.Run("missing and malformed keys are 400", func(t *testing.T) {
		before := s.orders.Load()
		r := call(t, srv, "POST", "/orders", "buyer", "", order)
		assert.Equal(t, http.StatusBadRequest, r.status)
		assert.Equal(t, DefaultProblemBase+"idempotency-key-missing", r.problem(t).Type)
		for _, bad := range []string{"tab\there", strings.Repeat("k", 256), "caf\xc3\xa9", `"unterminated`} {
			r := call(t, srv, "POST", "/orders", "buyer", bad, order)
			assert.Equal(t, http.StatusBadRequest, r.status, "%q", bad)
			assert.Equal(t, DefaultProblemBase+"idempotency-key-invalid", r.problem(t).Type)
		}
		assert.Equal(t, before, s.orders.Load())
		long := newKey(t)
		long += strings.Repeat("k", 255-len(long))
		assert.Equal(t, http.StatusCreated, call(t, srv, "POST", "/orders", "buyer", long, order).status)
	})

	t.Run("a quoted key is the same key", func(t *testing.T) {
		key := newKey(t)
		first := call(t, srv, "POST", "/orders", "buyer", key, order)
		second := call(t, srv, "POST", "/orders", "buyer", `"`+key+`"`, order)
		assert.Equal(t, first.body, second.body)
		assert.Equal(t, "true", second.header.Get(ReplayedHeader))
	})

	t.Run("GET passes through untouched", func(t *testing.T) {
		key := newKey(t)
		for range 2 {
			r := call(t, srv, "GET", "/orders", "", key, "")
			assert.Equal(t, http.StatusOK, r.status)
			assert.Equal(t, "list", r.body)
			assert.Empty(t, r.header.Get(ReplayedHeader))
		}
	})

	t.Run("no principal is 401", func(t *testing.T) {
		r := call(t, srv, "POST", "/orders", "", newKey(t), order)
		assert.Equal(t, http.StatusUnauthorized, r.status)
		assert.NotContains(t, r.body, "no user", "the scope error's text is not sent")
		r.problem(t)
	})

	t.Run("a body over MaxBody is 413", func(t *testing.T) {
		before := s.orders.Load()
		r := call(t, srv, "POST", "/orders", "buyer", newKey(t), strings.Repeat("a", 5<<10))
		assert.Equal(t, http.StatusRequestEntityTooLarge, r.status)
		assert.Equal(t, DefaultProblemBase+"request-body-too-large", r.problem(t).Type)
		assert.Equal(t, before, s.orders.Load())
	})

	t.Run("a panic is a 500 and holds the key", func(t *testing.T) {
		key := newKey(t)
		before := s.panics.Load()
		// A fresh connection: net/http's client retries a request with an
		// Idempotency-Key header by itself when a reused connection fails.
		client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		req, err := http.NewRequest("POST", srv.URL+"/panic", strings.NewReader(order))
		require.NoError(t, err)
		req.Header.Set("X-User", "buyer")
		req.Header.Set("Idempotency-Key", key)
		resp, err := client.Do(req)
		require.NoError(t, err, "answered, not an aborted connection")
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		resp.Body.Close()
		first := reply{status: resp.StatusCode, header: resp.Header, body: string(body)}
		assert.Equal(t, http.StatusInternalServerError, first.status)
		assert.Equal(t, failedType, first.problem(t).Type)
		assert.Empty(t, first.header.Get("Location"), "nothing of the unsent response")

		r := call(t, srv, "POST", "/panic", "buyer", key, order)
		assert.Equal(t, http.StatusConflict, r.status, "the handler may have acted: held, not run again")
		assert.Equal(t, heldType, r.problem(t).Type)
		assert.Equal(t, before+1, s.panics.Load())
	})

	t.Run("a held key runs again after the lease", func(t *testing.T) {
		s2 := newShop()
		short := serve(t, k, Config{Options: []once.Option{once.WithLease(300 * time.Millisecond)}}, s2)
		key := newKey(t)
		assert.Equal(t, http.StatusGatewayTimeout, call(t, short, "POST", "/timeout", "buyer", key, order).status)
		eventually(t, 10*time.Second, func() bool {
			return call(t, short, "POST", "/timeout", "buyer", key, order).status == http.StatusGatewayTimeout
		})
		assert.Equal(t, int64(2), s2.timeouts.Load())
	})
}
