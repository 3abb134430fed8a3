package oncehttp

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
)

// A handler's 504 (the payment provider timed out: charged or not,
// unknown) holds the key. The Transport retries the 504, gets the 409 of
// the held key, and returns it: waiting out its Retry-After (the hold)
// would run the handler again within the same client.Do.
func TestTransportReturnsTheHeldKeys409(t *testing.T) {
	var runs atomic.Int64
	m, err := New(once.New(nil, once.WithLease(time.Second), once.WithHoldFor(2*time.Second)),
		Config{Scope: func(*http.Request) (string, error) { return "u", nil }})
	require.NoError(t, err)
	srv := httptest.NewServer(m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if runs.Add(1) == 1 {
			http.Error(w, "upstream timeout", http.StatusGatewayTimeout)
			return
		}
		w.WriteHeader(http.StatusCreated)
	})))
	defer srv.Close()
	var retries []Retry
	client := NewClient(&Transport{BaseDelay: time.Millisecond, OnRetry: func(r Retry) { retries = append(retries, r) }})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", srv.URL, strings.NewReader("pay 10"))
	require.NoError(t, err)
	resp, err := client.Do(req)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	resp.Body.Close()
	r := reply{status: resp.StatusCode, header: resp.Header, body: string(body)}
	assert.Equal(t, http.StatusConflict, r.status)
	p := r.problem(t)
	assert.Equal(t, DefaultProblemBase+"request-outcome-unknown", p.Type)
	assert.Equal(t, keyHeld, p.KeyState)
	assert.Equal(t, "2", r.header.Get("Retry-After"), "the hold left")
	require.Len(t, retries, 1)
	assert.Equal(t, http.StatusGatewayTimeout, retries[0].Status)
	assert.Equal(t, int64(1), runs.Load(), "one client.Do, one execution")
}

// The 409 the Transport retries has Retry-After and no key_state but
// "running" (polled, or retried as a failure: see
// TestTransportPollsOnlyARunningKeys409); it puts back what it read of a
// 409's body, so the caller reads the whole document.
func TestTransportTellsRunningFromHeld409(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answer  func(w http.ResponseWriter)
		retried bool
	}{
		{"running", inProgress, true},
		{"held", func(w http.ResponseWriter) {
			p := newProblems(DefaultProblemBase, ProblemTypes{})
			p.write(w, probOutcomeUnknown, 5)
		}, false},
		{"running without Retry-After", func(w http.ResponseWriter) {
			p := newProblems(DefaultProblemBase, ProblemTypes{})
			p.write(w, probInProgress, 0)
		}, false},
		{"a plain 409", status(http.StatusConflict), false},
		{"a plain 409 with Retry-After (another draft server's)", status(http.StatusConflict, "Retry-After", "0"), true},
		{"another server's problem with Retry-After", func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "0")
			w.Header().Set("Content-Type", "application/problem+json; charset=utf-8")
			w.WriteHeader(http.StatusConflict)
			_, _ = io.WriteString(w, `{"type":"about:blank","status":409}`)
		}, true},
		{"a problem that is not JSON", status(http.StatusConflict, "Retry-After", "0", "Content-Type", "application/problem+json"), false},
		{"an unknown key_state", func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "0")
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusConflict)
			_, _ = io.WriteString(w, `{"type":"about:blank","status":409,"key_state":"resolving"}`)
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := httptest.NewRecorder()
			tc.answer(want)
			s, srv := startScripted(t, tc.answer, status(http.StatusCreated))
			var retries []Retry
			resp, body, err := post(t, NewClient(fastTransport(srv, &retries)), context.Background(), srv.URL, []byte("{}"))
			require.NoError(t, err)
			if tc.retried {
				assert.Equal(t, http.StatusCreated, resp.StatusCode)
				assert.Len(t, s.seen(), 2)
				return
			}
			assert.Equal(t, http.StatusConflict, resp.StatusCode)
			assert.Equal(t, want.Body.String(), string(body), "the body as sent")
			assert.Len(t, s.seen(), 1)
			assert.Empty(t, retries)
		})
	}
}

// Only a 409 that says its key is running (key_state "running", as the
// Middleware's request-in-progress does) is polled without using up
// MaxAttempts. Another 409 with Retry-After (a server that is not
// oncehttp: the draft's in-progress answer, or a business conflict that
// asks to come back) is retried as a failure, as a 429 or 503 is, and
// MaxAttempts ends it instead of MaxInProgressWait: it is not re-sent for
// a minute.
func TestTransportPollsOnlyARunningKeys409(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer func(w http.ResponseWriter)
		polled bool
	}{
		{"running", inProgress, true},
		{"a plain 409 with Retry-After", status(http.StatusConflict, "Retry-After", "0"), false},
		{"a JSON 409 with Retry-After", func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "0")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusConflict)
			_, _ = io.WriteString(w, `{"key_state":"running"}`)
		}, false},
		{"another server's problem with Retry-After", func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "0")
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusConflict)
			_, _ = io.WriteString(w, `{"type":"https://example.com/idempotency","title":"A request is outstanding for this Idempotency-Key","status":409}`)
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const polls = 40
			steps := make([]func(w http.ResponseWriter), polls)
			for i := range steps {
				steps[i] = tc.answer
			}
			s, srv := startScripted(t, append(steps, status(http.StatusCreated))...)
			var retries []Retry
			tr := fastTransport(srv, &retries)
			tr.MaxAttempts = 3
			tr.MaxInProgressWait = time.Hour // polls are not what ends it
			resp, body, err := post(t, NewClient(tr), context.Background(), srv.URL, []byte("{}"))
			require.NoError(t, err)
			if tc.polled {
				assert.Equal(t, http.StatusCreated, resp.StatusCode)
				assert.Len(t, s.seen(), polls+1)
				return
			}
			assert.Equal(t, http.StatusConflict, resp.StatusCode, "the third failure is returned")
			want := httptest.NewRecorder()
			tc.answer(want)
			assert.Equal(t, want.Body.String(), string(body), "the body as sent")
			assert.Len(t, s.seen(), 3)
			assert.Len(t, retries, 2)
		})
	}
}

// A RetryStatus without 409 turns polls off, as the Transport's doc says:
// the running 409 is returned at once, and the other statuses are still
// retried.
func TestTransportRetryStatusWithout409DoesNotPoll(t *testing.T) {
	s, srv := startScripted(t, status(http.StatusServiceUnavailable, "Retry-After", "0"), inProgress, status(http.StatusCreated))
	var retries []Retry
	tr := fastTransport(srv, &retries)
	tr.RetryStatus = func(code int) bool { return code != http.StatusConflict && DefaultRetryStatus(code) }
	resp, body, err := post(t, NewClient(tr), context.Background(), srv.URL, []byte("{}"))
	require.NoError(t, err)
	assert.Equal(t, http.StatusConflict, resp.StatusCode)
	assert.Equal(t, keyRunning, reply{status: resp.StatusCode, header: resp.Header, body: string(body)}.problem(t).KeyState)
	assert.Len(t, s.seen(), 2, "the 503 retried, the running 409 returned")
	require.Len(t, retries, 1)
	assert.Equal(t, http.StatusServiceUnavailable, retries[0].Status)
}
