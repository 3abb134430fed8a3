package oncehttp

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// attempt is what a scripted server saw of one request.
type attempt struct {
	key  string
	body []byte
}

// scripted is a server that answers the n-th request with the n-th step
// (the last step repeats) and records every request.
type scripted struct {
	mu       sync.Mutex
	attempts []attempt
	steps    []func(w http.ResponseWriter)
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.attempts = append(s.attempts, attempt{r.Header.Get(DefaultHeader), body})
	step := s.steps[min(len(s.attempts), len(s.steps))-1]
	s.mu.Unlock()
	step(w)
}

func (s *scripted) seen() []attempt {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]attempt(nil), s.attempts...)
}

func status(code int, header ...string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(code)
		_, _ = io.WriteString(w, http.StatusText(code))
	}
}

// inProgress is the Middleware's 409 for a request still running, with
// Retry-After: 0 (the Middleware sends at least 1; 0 keeps tests fast).
func inProgress(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "0")
	p := newProblems(DefaultProblemBase, ProblemTypes{})
	p.write(w, probInProgress, 0)
}

func startScripted(t *testing.T, steps ...func(w http.ResponseWriter)) (*scripted, *httptest.Server) {
	t.Helper()
	s := &scripted{steps: steps}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv
}

// fastTransport retries quickly, over the test server's real client
// transport, and records its retry decisions.
func fastTransport(srv *httptest.Server, retries *[]Retry) *Transport {
	var mu sync.Mutex
	return &Transport{
		Base:      srv.Client().Transport,
		BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond,
		OnRetry: func(r Retry) {
			mu.Lock()
			defer mu.Unlock()
			*retries = append(*retries, r)
		},
	}
}

func post(t *testing.T, c *http.Client, ctx context.Context, url string, body []byte) (*http.Response, []byte, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	require.NoError(t, err)
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, b, nil
}

// requireOneKey checks that every attempt carried the same, quoted key and
// the same body bytes.
func requireOneKey(t *testing.T, attempts []attempt, body []byte) {
	t.Helper()
	require.NotEmpty(t, attempts)
	first := attempts[0].key
	require.True(t, strings.HasPrefix(first, `"`) && strings.HasSuffix(first, `"`), "an sf-string: %s", first)
	for i, a := range attempts {
		require.Equal(t, first, a.key, "attempt %d", i+1)
		require.Equal(t, body, a.body, "attempt %d resends the body byte for byte", i+1)
	}
}

var binaryBody = append([]byte(`{"amount":1250,"note":"`), 0x00, 0xff, 0xfe, '"', '}')

func TestTransportRetries409ThenSucceeds(t *testing.T) {
	s, srv := startScripted(t, inProgress, inProgress, status(201, ReplayedHeader, "true"))
	var retries []Retry
	resp, body, err := post(t, NewClient(fastTransport(srv, &retries)), context.Background(), srv.URL, binaryBody)
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Equal(t, "Created", string(body))
	assert.True(t, Replayed(resp))
	require.Len(t, s.seen(), 3)
	requireOneKey(t, s.seen(), binaryBody)
	require.Len(t, retries, 2)
	assert.Equal(t, http.StatusConflict, retries[0].Status)
	assert.Equal(t, 2, retries[1].Attempt)
}

func TestTransportHonoursRetryAfter(t *testing.T) {
	s, srv := startScripted(t, status(429, "Retry-After", "1"), status(201))
	var retries []Retry
	tr := fastTransport(srv, &retries)
	resp, _, err := post(t, NewClient(tr), context.Background(), srv.URL, []byte("{}"))
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.False(t, Replayed(resp))
	require.Len(t, s.seen(), 2)
	require.Len(t, retries, 1)
	assert.Equal(t, time.Second, retries[0].Delay, "the wait is the server's Retry-After, not the backoff")

	// A Retry-After beyond MaxRetryAfter ends the retries: the answer is
	// the caller's.
	s, srv = startScripted(t, status(503, "Retry-After", "3600"), status(201))
	retries = nil
	resp, body, err := post(t, NewClient(fastTransport(srv, &retries)), context.Background(), srv.URL, []byte("{}"))
	require.NoError(t, err)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, "Service Unavailable", string(body), "the returned answer is unread")
	assert.Len(t, s.seen(), 1)
	assert.Empty(t, retries)
}

func TestTransportNeverRetriesFinalAnswers(t *testing.T) {
	for _, code := range []int{200, 201, 400, 401, 402, 403, 404, 410, 422, 500} {
		s, srv := startScripted(t, status(code), status(201))
		var retries []Retry
		resp, _, err := post(t, NewClient(fastTransport(srv, &retries)), context.Background(), srv.URL, []byte("{}"))
		require.NoError(t, err)
		assert.Equal(t, code, resp.StatusCode)
		assert.Len(t, s.seen(), 1, "%d is final", code)
	}
	for _, code := range []int{409, 429, 502, 503, 504} {
		first := status(code)
		if code == http.StatusConflict {
			first = inProgress // the one 409 that is retried
		}
		s, srv := startScripted(t, first, status(201))
		var retries []Retry
		resp, _, err := post(t, NewClient(fastTransport(srv, &retries)), context.Background(), srv.URL, []byte("{}"))
		require.NoError(t, err)
		assert.Equal(t, http.StatusCreated, resp.StatusCode, "%d is retried", code)
		assert.Len(t, s.seen(), 2)
	}
}

func TestTransportStopsAtMaxAttempts(t *testing.T) {
	s, srv := startScripted(t, status(503))
	var retries []Retry
	tr := fastTransport(srv, &retries)
	tr.MaxAttempts = 3
	resp, _, err := post(t, NewClient(tr), context.Background(), srv.URL, []byte("{}"))
	require.NoError(t, err)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "the last answer is returned")
	assert.Len(t, s.seen(), 3)
	assert.Len(t, retries, 2)
}

// Polls of a running 409 do not use up MaxAttempts: eight of them, then
// the answer, with the default MaxAttempts (5).
func TestTransportPollsRunning409WithoutUsingAttempts(t *testing.T) {
	const polls = 8
	steps := make([]func(w http.ResponseWriter), 0, polls+1)
	for range polls {
		steps = append(steps, inProgress)
	}
	s, srv := startScripted(t, append(steps, status(http.StatusCreated))...)
	var retries []Retry
	tr := fastTransport(srv, &retries)
	require.Zero(t, tr.MaxAttempts, "the default")
	resp, _, err := post(t, NewClient(tr), context.Background(), srv.URL, binaryBody)
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	require.Len(t, s.seen(), polls+1)
	requireOneKey(t, s.seen(), binaryBody)
	require.Len(t, retries, polls)
	for i, r := range retries {
		assert.Equal(t, i+1, r.Attempt)
		assert.Equal(t, http.StatusConflict, r.Status)
		assert.Equal(t, tr.BaseDelay, r.Delay, "Retry-After: 0 waits BaseDelay, the floor")
	}

	// Failures still count: 503s between the polls end it at MaxAttempts.
	s, srv = startScripted(t, inProgress, status(503), inProgress, status(503), inProgress, status(503), status(201))
	retries = nil
	tr = fastTransport(srv, &retries)
	tr.MaxAttempts = 3
	resp, _, err = post(t, NewClient(tr), context.Background(), srv.URL, []byte("{}"))
	require.NoError(t, err)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "the third failure is returned")
	assert.Len(t, s.seen(), 6)
}

// A first request that never finishes: the Transport polls until the sum
// of its planned waits would pass MaxInProgressWait, then returns the
// running 409.
func TestTransportPollsUntilMaxInProgressWait(t *testing.T) {
	s, srv := startScripted(t, inProgress)
	var retries []Retry
	tr := fastTransport(srv, &retries)
	tr.MaxAttempts = 1 << 20 // not what ends it
	tr.MaxInProgressWait = 10*tr.BaseDelay + tr.BaseDelay/2
	resp, body, err := post(t, NewClient(tr), context.Background(), srv.URL, []byte("{}"))
	require.NoError(t, err)
	assert.Equal(t, http.StatusConflict, resp.StatusCode)
	p := reply{status: resp.StatusCode, header: resp.Header, body: string(body)}.problem(t)
	assert.Equal(t, keyRunning, p.KeyState, "the running 409, as sent")
	assert.Len(t, retries, 10, "ten waits of BaseDelay fit in the budget, the eleventh does not")
	assert.Len(t, s.seen(), 11)

	// A Retry-After the budget left cannot hold is not waited for at all,
	// nor one beyond MaxRetryAfter.
	for ra, budget := range map[string]time.Duration{"2": time.Second, "3600": 2 * time.Hour} {
		s, srv = startScripted(t, func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", ra)
			p := newProblems(DefaultProblemBase, ProblemTypes{})
			p.write(w, probInProgress, 0)
		}, status(http.StatusCreated))
		retries = nil
		tr = fastTransport(srv, &retries)
		tr.MaxInProgressWait = budget
		resp, _, err = post(t, NewClient(tr), context.Background(), srv.URL, []byte("{}"))
		require.NoError(t, err)
		assert.Equal(t, http.StatusConflict, resp.StatusCode, "Retry-After %s", ra)
		assert.Len(t, s.seen(), 1, "Retry-After %s", ra)
		assert.Empty(t, retries, "Retry-After %s", ra)
	}
}

func TestTransportContextDeadlineEndsRetries(t *testing.T) {
	// A wait that would outlast the deadline is not started: the answer
	// in hand is returned at once.
	s, srv := startScripted(t, status(503, "Retry-After", "2"), status(201))
	var retries []Retry
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	resp, _, err := post(t, NewClient(fastTransport(srv, &retries)), ctx, srv.URL, []byte("{}"))
	require.NoError(t, err)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Len(t, s.seen(), 1)
	assert.NoError(t, ctx.Err(), "returned before the deadline, not at it")

	// Backoff waits that fit run until the deadline ends them.
	s, srv = startScripted(t, status(503))
	retries = nil
	tr := fastTransport(srv, &retries)
	tr.MaxAttempts = 1 << 20
	tr.BaseDelay, tr.MaxDelay = 20*time.Millisecond, 20*time.Millisecond
	ctx, cancel = context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	resp, _, err = post(t, NewClient(tr), ctx, srv.URL, []byte("{}"))
	if err == nil {
		assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	} else {
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	}
	n := len(s.seen())
	assert.Greater(t, n, 1, "it retried while the deadline allowed")
	assert.Less(t, n, 1<<20, "the deadline, not MaxAttempts, ended it")
	requireOneKey(t, s.seen(), []byte("{}"))
}

func TestTransportRetriesConnectionErrors(t *testing.T) {
	var mu sync.Mutex
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, b)
		n := len(bodies)
		mu.Unlock()
		if n == 1 { // processed, then the connection drops: no answer
			conn, _, err := http.NewResponseController(w).Hijack()
			require.NoError(t, err)
			_ = conn.Close()
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	var retries []Retry
	tr := fastTransport(srv, &retries)
	tr.Base = &http.Transport{DisableKeepAlives: true} // fresh connections: no net/http retry hides the drop
	resp, _, err := post(t, NewClient(tr), context.Background(), srv.URL, binaryBody)
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	require.Len(t, retries, 1)
	assert.Error(t, retries[0].Err)
	require.Len(t, bodies, 2)
	assert.Equal(t, binaryBody, bodies[1], "the body is resent byte for byte")
}

func TestTransportKeySources(t *testing.T) {
	s, srv := startScripted(t, status(201))
	c := NewClient(&Transport{Base: srv.Client().Transport})

	_, _, err := post(t, c, WithKey(context.Background(), `order-"7"`), srv.URL, nil)
	require.NoError(t, err)
	assert.Equal(t, `"order-\"7\""`, s.seen()[0].key, "the context's key, as an sf-string")

	req, err := http.NewRequest(http.MethodPost, srv.URL, nil)
	require.NoError(t, err)
	req.Header.Set(DefaultHeader, "caller-key")
	resp, err := c.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, "caller-key", s.seen()[1].key, "the caller's header, as it is")
	assert.Equal(t, "caller-key", req.Header.Get(DefaultHeader), "the caller's request is not modified")

	bare := NewClient(&Transport{Base: srv.Client().Transport, Bare: true})
	_, _, err = post(t, bare, WithKey(context.Background(), "k1"), srv.URL, nil)
	require.NoError(t, err)
	assert.Equal(t, "k1", s.seen()[2].key)

	// Two requests without a key get two keys.
	_, _, err = post(t, c, context.Background(), srv.URL, nil)
	require.NoError(t, err)
	_, _, err = post(t, c, context.Background(), srv.URL, nil)
	require.NoError(t, err)
	assert.NotEqual(t, s.seen()[3].key, s.seen()[4].key)
	assert.Len(t, NewKey(), 22)

	// GET passes through: no key.
	resp, err = c.Get(srv.URL)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Empty(t, s.seen()[5].key)

	// A key no server accepts fails before anything is sent.
	for _, bad := range []string{"", "caf\xc3\xa9", strings.Repeat("k", 256), "tab\t"} {
		_, _, err = post(t, c, WithKey(context.Background(), bad), srv.URL, []byte("x"))
		assert.ErrorIs(t, err, ErrInvalidKey, "%q", bad)
	}
	assert.Len(t, s.seen(), 6)
}

func TestTransportWithoutGetBodySendsOnce(t *testing.T) {
	s, srv := startScripted(t, status(503), status(201))
	var retries []Retry
	req, err := http.NewRequest(http.MethodPost, srv.URL, io.MultiReader(strings.NewReader("stream")))
	require.NoError(t, err)
	require.Nil(t, req.GetBody)
	resp, err := NewClient(fastTransport(srv, &retries)).Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Len(t, s.seen(), 1, "a body that cannot be resent is sent once")
	assert.NotEmpty(t, s.seen()[0].key, "with its key")
}

func TestTransportCancelledWhileWaiting(t *testing.T) {
	_, srv := startScripted(t, status(503, "Retry-After", "30"))
	ctx, cancel := context.WithCancel(context.Background())
	tr := &Transport{Base: srv.Client().Transport, OnRetry: func(Retry) { cancel() }}
	_, _, err := post(t, NewClient(tr), ctx, srv.URL, []byte("{}"))
	assert.ErrorIs(t, err, context.Canceled)
}

func TestRetryAfterParsing(t *testing.T) {
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"0": 0, "1": time.Second, " 120 ": 2 * time.Minute,
		now.Add(90 * time.Second).Format(http.TimeFormat): 90 * time.Second,
		now.Add(-time.Hour).Format(http.TimeFormat):       0,
		"99999999999999999999999":                         1<<63 - 1,
	} {
		got, ok := retryAfter(v, now)
		assert.True(t, ok, v)
		assert.Equal(t, want, got, v)
	}
	for _, v := range []string{"", "-1", "soon", "1.5"} {
		_, ok := retryAfter(v, now)
		assert.False(t, ok, v)
	}
	tr := &Transport{BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second}
	for attempt := 1; attempt < 70; attempt++ {
		d := tr.backoff(attempt)
		ceiling := min(100*time.Millisecond<<min(attempt-1, 20), time.Second)
		assert.LessOrEqual(t, d, ceiling)
		assert.GreaterOrEqual(t, d, ceiling/2)
	}
}

// TestReplayedFollowsRedirects: a replayed 303 to the result (the
// Middleware's answer for a response too large to store) makes the
// followed GET's answer a replay too; the GET carries no key.
func TestReplayedFollowsRedirects(t *testing.T) {
	var getKey string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			getKey = r.Header.Get(DefaultHeader)
			_, _ = io.WriteString(w, "the result")
			return
		}
		w.Header().Set("Location", "/exports/1")
		w.Header().Set(ReplayedHeader, "true")
		w.WriteHeader(http.StatusSeeOther)
	}))
	defer srv.Close()
	resp, body, err := post(t, NewClient(&Transport{Base: srv.Client().Transport}), context.Background(), srv.URL, []byte("{}"))
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "the result", string(body))
	assert.True(t, Replayed(resp))
	assert.Empty(t, getKey)
	assert.False(t, Replayed(&http.Response{Header: http.Header{}}))
}

// TestTransportFollowsShouldRetryAdvice: Stripe's Stripe-Should-Retry
// header overrides the status both ways.
func TestTransportFollowsShouldRetryAdvice(t *testing.T) {
	s, srv := startScripted(t, status(409, "Stripe-Should-Retry", "false"), status(201))
	var retries []Retry
	resp, _, err := post(t, NewClient(fastTransport(srv, &retries)), context.Background(), srv.URL, []byte("{}"))
	require.NoError(t, err)
	assert.Equal(t, http.StatusConflict, resp.StatusCode)
	assert.Len(t, s.seen(), 1)

	s, srv = startScripted(t, status(400, "Stripe-Should-Retry", "true"), status(201))
	resp, _, err = post(t, NewClient(fastTransport(srv, &retries)), context.Background(), srv.URL, []byte("{}"))
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Len(t, s.seen(), 2)
}
