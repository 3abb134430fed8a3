package oncehttp

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/memory"
)

func TestNewRefusesBadConfig(t *testing.T) {
	k := once.New(nil)
	_, err := New(k, Config{})
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "Scope", ce.Field)
	assert.ErrorIs(t, err, ErrInvalidConfig)

	_, err = New(nil, Config{Scope: userScope})
	assert.ErrorIs(t, err, ErrInvalidConfig)
	_, err = New(k, Config{Scope: userScope, MaxStoredBody: -1})
	assert.ErrorIs(t, err, ErrInvalidConfig)
	_, err = New(k, Config{Scope: userScope, Header: "Bad Header"})
	assert.ErrorIs(t, err, ErrInvalidConfig)
	_, err = New(k, Config{Scope: userScope, Methods: []string{""}})
	assert.ErrorIs(t, err, ErrInvalidConfig)
}

func TestScopeErrorChoosesStatus(t *testing.T) {
	s := newShop()
	srv := serve(t, once.New(nil), Config{Scope: func(*http.Request) (string, error) {
		return "", &ScopeError{Status: http.StatusForbidden, Err: errors.New("secret reason")}
	}}, s)
	r := call(t, srv, "POST", "/orders", "buyer", "k1", "{}")
	assert.Equal(t, http.StatusForbidden, r.status)
	assert.NotContains(t, r.body, "secret reason")
	assert.Equal(t, DefaultProblemBase+"unauthorized", r.problem(t).Type)
	assert.Zero(t, s.orders.Load())
}

// failingStore fails every claim, as an unreachable database would.
type failingStore struct{ backends.Store }

func (failingStore) Claim(context.Context, backends.ClaimParams) (backends.ClaimResult, error) {
	return backends.ClaimResult{}, errors.New("dial tcp 10.0.0.7:5432: connection refused")
}

func TestStoreFailureIs503AndFailsClosed(t *testing.T) {
	s := newShop()
	srv := serve(t, once.New(failingStore{memory.New(nil)}), Config{}, s)
	r := call(t, srv, "POST", "/orders", "buyer", "k1", "{}")
	assert.Equal(t, http.StatusServiceUnavailable, r.status)
	assert.Equal(t, "1", r.header.Get("Retry-After"))
	assert.Equal(t, DefaultProblemBase+"store-unavailable", r.problem(t).Type)
	assert.NotContains(t, r.body, "10.0.0.7", "never the raw store error")
	assert.Zero(t, s.orders.Load(), "the handler does not run without a claim")
}

func TestResponseOverMaxStoredBodyStreamsAndIsNotReplayed(t *testing.T) {
	s := newShop()
	srv := serve(t, once.New(nil), Config{MaxStoredBody: 2048}, s)
	first := call(t, srv, "POST", "/big", "buyer", "k1", "")
	assert.Equal(t, http.StatusOK, first.status)
	assert.Len(t, first.body, 8<<10, "the first client gets the whole body")

	second := call(t, srv, "POST", "/big", "buyer", "k1", "")
	assert.Equal(t, http.StatusInternalServerError, second.status)
	assert.Equal(t, DefaultProblemBase+"response-unavailable", second.problem(t).Type)
	assert.Equal(t, int64(1), s.big.Load(), "the handler does not run again")
}

func TestWaitOptionReplaysToTheDuplicate(t *testing.T) {
	s := newShop()
	srv := serve(t, once.New(nil), Config{Options: []once.Option{once.WithWait(10 * time.Second)}}, s)
	var first, second reply
	var wg sync.WaitGroup
	wg.Go(func() { first = call(t, srv, "POST", "/slow", "buyer", "k1", "x") })
	<-s.slowStarted
	wg.Go(func() { second = call(t, srv, "POST", "/slow", "buyer", "k1", "x") })
	time.Sleep(50 * time.Millisecond) // let the duplicate start waiting; correctness does not depend on it
	close(s.slowRelease)
	wg.Wait()
	assert.Equal(t, http.StatusCreated, first.status)
	assert.Equal(t, http.StatusCreated, second.status)
	assert.Equal(t, "slow done", second.body)
	assert.Equal(t, "true", second.header.Get(ReplayedHeader))
	assert.Equal(t, int64(1), s.slow.Load())
}

func TestAllowMissingKeyPassesThrough(t *testing.T) {
	s := newShop()
	srv := serve(t, once.New(nil), Config{AllowMissingKey: true}, s)
	for range 2 {
		r := call(t, srv, "POST", "/orders", "buyer", "", "{}")
		assert.Equal(t, http.StatusCreated, r.status)
	}
	assert.Equal(t, int64(2), s.orders.Load())
}

func TestProblemTypesAreConfigurable(t *testing.T) {
	srv := serve(t, once.New(nil), Config{
		ProblemBase:  "https://api.example.com/errors/",
		ProblemTypes: ProblemTypes{MissingKey: "https://docs.example.com/idempotency"},
	}, newShop())
	r := call(t, srv, "POST", "/orders", "buyer", "", "{}")
	assert.Equal(t, "https://docs.example.com/idempotency", r.problem(t).Type)
	r = call(t, srv, "POST", "/orders", "buyer", "\t", "{}")
	assert.Equal(t, "https://api.example.com/errors/idempotency-key-invalid", r.problem(t).Type)
}

func TestRepeatedKeyHeaderIs400(t *testing.T) {
	srv := serve(t, once.New(nil), Config{}, newShop())
	req, err := http.NewRequest("POST", srv.URL+"/orders", strings.NewReader("{}"))
	require.NoError(t, err)
	req.Header.Set("X-User", "buyer")
	req.Header.Add("Idempotency-Key", "a")
	req.Header.Add("Idempotency-Key", "b")
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
}

// TestResponseWriterSurface checks what a guarded handler can do with its
// writer: buffered Flush, deadlines through Unwrap, no hijacking, no body
// on a 204, and an empty 200 when it writes nothing.
func TestResponseWriterSurface(t *testing.T) {
	results := make(chan map[string]error, 2)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /rc", func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		_, _, hijackErr := rc.Hijack()
		results <- map[string]error{
			"flush":    rc.Flush(),
			"deadline": rc.SetWriteDeadline(time.Now().Add(time.Minute)),
			"hijack":   hijackErr,
		}
		w.WriteHeader(http.StatusNoContent)
		_, err := w.Write([]byte("no"))
		results <- map[string]error{"write204": err}
	})
	mux.HandleFunc("POST /empty", func(http.ResponseWriter, *http.Request) {})
	m, err := New(once.New(nil), Config{Scope: userScope})
	require.NoError(t, err)
	srv := httptest.NewServer(m.Handler(mux))
	defer srv.Close()

	r := call(t, srv, "POST", "/rc", "buyer", "k1", "")
	got := <-results
	assert.NoError(t, got["flush"])
	assert.NoError(t, got["deadline"])
	assert.ErrorIs(t, got["hijack"], http.ErrNotSupported)
	assert.ErrorIs(t, (<-results)["write204"], http.ErrBodyNotAllowed)
	assert.Equal(t, http.StatusNoContent, r.status)
	r = call(t, srv, "POST", "/rc", "buyer", "k1", "")
	assert.Equal(t, http.StatusNoContent, r.status)
	assert.Equal(t, "true", r.header.Get(ReplayedHeader))

	for i := range 2 {
		r = call(t, srv, "POST", "/empty", "buyer", "k2", "")
		assert.Equal(t, http.StatusOK, r.status)
		assert.Empty(t, r.body)
		assert.Equal(t, i == 1, r.header.Get(ReplayedHeader) == "true")
	}
}

func TestRequestKey(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
		ok   bool
	}{
		{"7f3a9c2e-5b1d-4e8a-9f60-2c4d8e1b7a05", "7f3a9c2e-5b1d-4e8a-9f60-2c4d8e1b7a05", true},
		{`"8e03978e-40d5-43e8-bc93-6894a57f9324"`, "8e03978e-40d5-43e8-bc93-6894a57f9324", true},
		{`"a\"b\\c"`, `a"b\c`, true},
		{"with space", "with space", true},
		{strings.Repeat("k", 255), strings.Repeat("k", 255), true},
		{strings.Repeat("k", 256), "", false},
		{`""`, "", false},
		{`"open`, "", false},
		{`"bad\escape"`, "", false},
		{`"a"b"`, "", false},
		{"tab\there", "", false},
		{"nul\x00", "", false},
		{"del\x7f", "", false},
		{"caf\xc3\xa9", "", false},
	} {
		r := httptest.NewRequest("POST", "/", nil)
		r.Header["Idempotency-Key"] = []string{tc.in}
		got, err := requestKey(r, "Idempotency-Key")
		if tc.ok {
			assert.NoError(t, err, "%q", tc.in)
			assert.Equal(t, tc.want, got)
		} else {
			assert.ErrorIs(t, err, errInvalidKey, "%q", tc.in)
		}
	}
	_, err := requestKey(httptest.NewRequest("POST", "/", nil), "Idempotency-Key")
	assert.ErrorIs(t, err, errNoKey)
}

func TestStoredHeaderNeverKeepsCookiesOrHopByHop(t *testing.T) {
	allow := storeList([]string{"location", "Set-Cookie", "Connection", "Transfer-Encoding", "Proxy-Authenticate",
		"Keep-Alive", "Upgrade", "TE", "Trailer", "X-Trace", "X-Trace", "Content-Type"})
	assert.Equal(t, []string{"Location", "X-Trace", "Content-Type", "Content-Encoding", "Content-Range", "Vary"}, allow,
		"the representation headers are always stored")

	h := http.Header{
		"Location":     {"/orders/1"},
		"Set-Cookie":   {"s=1"},
		"Connection":   {"close, X-Trace"},
		"X-Trace":      {"abc"},
		"Content-Type": {"application/json"},
	}
	got := storedHeader(h, allow)
	assert.Equal(t, http.Header{"Location": {"/orders/1"}, "Content-Type": {"application/json"}}, got)
	h["Location"][0] = "/changed"
	assert.Equal(t, "/orders/1", got.Get("Location"), "a copy, not an alias")
}

func TestRetryAfterSeconds(t *testing.T) {
	assert.Equal(t, 1, retryAfterSeconds(0))
	assert.Equal(t, 1, retryAfterSeconds(300*time.Millisecond))
	assert.Equal(t, 1, retryAfterSeconds(time.Second))
	assert.Equal(t, 2, retryAfterSeconds(1001*time.Millisecond))
	assert.Equal(t, 1, retryAfterSeconds(-time.Hour))
	assert.Equal(t, int(math.MaxInt64/int64(time.Second))+1, retryAfterSeconds(math.MaxInt64), "no overflow")
}

// TestReplayIsByteForByte compares the raw bodies and the replayed status
// line of a response whose body is not JSON.
func TestReplayIsByteForByte(t *testing.T) {
	body := "\x00\x01binary\xff" + strings.Repeat("z", 5000)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("ETag", `"v1"`)
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.WriteString(w, body[:10])
		_, _ = io.WriteString(w, body[10:])
	})
	m, err := New(once.New(nil), Config{Scope: userScope})
	require.NoError(t, err)
	srv := httptest.NewServer(m.Handler(h))
	defer srv.Close()
	a := call(t, srv, "POST", "/", "u", "k", "")
	b := call(t, srv, "POST", "/", "u", "k", "")
	assert.Equal(t, body, a.body)
	assert.Equal(t, body, b.body)
	assert.Equal(t, http.StatusAccepted, b.status)
	assert.Equal(t, `"v1"`, b.header.Get("ETag"))
	assert.Equal(t, a.header.Get("Content-Length"), b.header.Get("Content-Length"))
}

func TestResponseCodecRoundTrip(t *testing.T) {
	in := storedResponse{Format: storedFormat, Status: 201,
		Header: http.Header{"Location": {"/orders/1"}, "Link": {"<a>", "<b>"}},
		Body:   []byte("\x00body")}
	data, err := responseCodec{}.Marshal(in)
	require.NoError(t, err)
	var out storedResponse
	require.NoError(t, responseCodec{}.Unmarshal(data, &out))
	assert.Equal(t, in, out)

	data, err = responseCodec{}.Marshal(storedResponse{Format: storedFormat, Status: 200, TooLarge: true})
	require.NoError(t, err)
	require.NoError(t, responseCodec{}.Unmarshal(data, &out))
	assert.Equal(t, storedResponse{Format: storedFormat, Status: 200, TooLarge: true}, out)

	for i := range data { // every truncation is an error, never a panic
		assert.Error(t, responseCodec{}.Unmarshal(data[:i], &out))
	}
	for _, junk := range [][]byte{{1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, {1, 200, 1, 0, 9, 9}, {1, 201, 1, 0, 5, 1, 'L'}} {
		assert.Error(t, responseCodec{}.Unmarshal(junk, &out), "%v", junk)
	}
	// Any other value, a step's, is JSON.
	data, err = responseCodec{}.Marshal("a step's value")
	require.NoError(t, err)
	var step string
	require.NoError(t, responseCodec{}.Unmarshal(data, &step))
	assert.Equal(t, "a step's value", step)
}
