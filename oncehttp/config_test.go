package oncehttp

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/memory"
)

// countingStore counts the store calls New makes.
type countingStore struct {
	backends.Store
	calls int
}

func (s *countingStore) Claim(ctx context.Context, p backends.ClaimParams) (backends.ClaimResult, error) {
	s.calls++
	return s.Store.Claim(ctx, p)
}

func (s *countingStore) Resolve(ctx context.Context, p backends.ResolveParams) (backends.ResolveResult, error) {
	s.calls++
	return s.Store.Resolve(ctx, p)
}

// New refuses a policy with which every request would fail 500: an
// option the core refuses, in Config.Options or on the Keeper. It checks
// without a store call.
func TestNewRefusesAPolicyEveryRequestWouldFail(t *testing.T) {
	store := &countingStore{Store: memory.New(nil)}
	for _, tc := range []struct {
		name  string
		k     *once.Keeper
		opts  []once.Option
		field string
	}{
		{"negative wait", once.New(store), []once.Option{once.WithWait(-1)}, "Options"},
		{"zero lease", once.New(store), []once.Option{once.WithLease(0)}, "Options"},
		{"negative retention", once.New(store), []once.Option{once.WithRetention(-time.Second)}, "Options"},
		{"the Keeper's lease", once.New(store, once.WithLease(-1)), nil, "Keeper"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := New(tc.k, Config{Scope: userScope, Options: tc.opts})
			assert.Nil(t, m)
			var ce *ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tc.field, ce.Field)
			assert.ErrorIs(t, err, ErrInvalidConfig)
		})
	}
	_, err := New(once.New(store), Config{Scope: userScope, Options: []once.Option{once.WithWait(time.Second), nil}})
	require.NoError(t, err)
	assert.Zero(t, store.calls, "New sends nothing to the store")
}

// A MaxStoredBody near math.MaxInt overflowed the outcome cap the
// middleware sets, and every request failed 500; the cap saturates.
func TestMaxStoredBodyUpToMaxInt(t *testing.T) {
	for _, n := range []int{math.MaxInt, math.MaxInt - headerBudget, math.MaxInt - headerBudget + 1} {
		s := newShop()
		srv := serve(t, once.New(nil), Config{MaxStoredBody: n}, s)
		first := call(t, srv, "POST", "/orders", "buyer", "k", "{}")
		assert.Equal(t, http.StatusCreated, first.status, "MaxStoredBody %d: %s", n, first.body)
		replay := call(t, srv, "POST", "/orders", "buyer", "k", "{}")
		assert.Equal(t, http.StatusCreated, replay.status)
		assert.Equal(t, "true", replay.header.Get(ReplayedHeader))
		assert.Equal(t, int64(1), s.orders.Load())
	}
}

// Stored headers beyond the 64 KiB room beside MaxStoredBody make the
// response stored as a too-large one, as Config.MaxStoredBody says: a
// retry is 303 See Other to its Location (or 500 response-unavailable
// without one), never a plain 500 internal-error, and the handler does
// not run again.
func TestHugeStoredHeadersReplayAsTooLarge(t *testing.T) {
	huge := "<" + strings.Repeat("a", 70<<10) + ">"
	for _, tc := range []struct {
		name     string
		location string
		header   string // the huge header's name
		want     int
	}{
		{"with a Location", "/orders/1", "Link", http.StatusSeeOther},
		{"without one", "", "Link", http.StatusInternalServerError},
		{"a huge Location", huge, "Location", http.StatusInternalServerError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var runs int
			m, err := New(once.New(nil), Config{Scope: userScope, MaxStoredBody: 1024})
			require.NoError(t, err)
			h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				runs++
				if tc.location != "" {
					w.Header().Set("Location", tc.location)
				}
				w.Header().Set(tc.header, huge)
				w.WriteHeader(http.StatusCreated)
				_, _ = w.Write([]byte("ok"))
			}))
			do := func() *reply {
				rr := recordPost(h, "k")
				return &reply{status: rr.Code, header: rr.Header(), body: rr.Body.String()}
			}
			first := do()
			assert.Equal(t, http.StatusCreated, first.status)
			assert.Equal(t, "ok", first.body, "the first client gets the response as written")
			retry := do()
			require.Equal(t, tc.want, retry.status, retry.body)
			p := retry.problem(t)
			assert.Equal(t, http.StatusCreated, p.OriginalStatus)
			assert.Equal(t, "true", retry.header.Get(ReplayedHeader))
			if tc.want == http.StatusSeeOther {
				assert.Equal(t, tc.location, retry.header.Get("Location"))
				assert.Equal(t, DefaultProblemBase+"response-too-large", p.Type)
			} else {
				assert.Equal(t, DefaultProblemBase+"response-unavailable", p.Type)
			}
			assert.Equal(t, 1, runs)
		})
	}
}

// encodedSize, which fit relies on, is the length Marshal produces.
func TestEncodedSizeIsTheCodecsLength(t *testing.T) {
	for _, s := range []storedResponse{
		{Format: storedFormat, Status: 200},
		{Format: storedFormat, Status: 999, Header: http.Header{"Location": {"/a"}, "Link": {strings.Repeat("l", 300), ""}},
			Trailer: http.Header{"X-Sum": {"1"}}, Body: []byte(strings.Repeat("b", 200)), TooLarge: true},
	} {
		b, err := responseCodec{}.Marshal(s)
		require.NoError(t, err)
		assert.Equal(t, len(b), s.encodedSize())
	}
}

// recordPost serves one POST with key, from user "buyer", to h.
func recordPost(h http.Handler, key string) *httptest.ResponseRecorder {
	rr := httptest.NewRecorder()
	req := httptest.NewRequest("POST", "/", strings.NewReader("x"))
	req.Header.Set(DefaultHeader, key)
	req.Header.Set("X-User", "buyer")
	h.ServeHTTP(rr, req)
	return rr
}
