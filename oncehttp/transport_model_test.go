package oncehttp

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// step is one scripted answer: a status with an optional Retry-After, or a
// connection dropped after the request was read.
type step struct {
	status     int
	retryAfter string
	drop       bool
	// problem, for a 409, is the key_state of the Middleware's Problem
	// Details sent with it ("running", "held"), or "" for a plain 409.
	problem string
}

func (s step) String() string {
	if s.drop {
		return "drop"
	}
	if s.problem != "" {
		return fmt.Sprintf("%d(ra=%q,%s)", s.status, s.retryAfter, s.problem)
	}
	return fmt.Sprintf("%d(ra=%q)", s.status, s.retryAfter)
}

// retried reports whether the Transport retries s (before MaxAttempts or
// MaxInProgressWait): a status of DefaultRetryStatus, unless its
// Retry-After is too long; a 409 only with a Retry-After and not for a
// held key.
func (s step) retried() bool {
	switch {
	case !DefaultRetryStatus(s.status) || s.retryAfter == "3600":
		return false
	case s.status == http.StatusConflict:
		return s.problem != keyHeld && s.retryAfter != ""
	}
	return true
}

// running reports whether s is a running 409 the Transport polls: one that
// does not count toward MaxAttempts. A retried 409 that does not say its
// key is running (a plain one) is a failure.
func (s step) running() bool {
	return s.status == http.StatusConflict && s.retried() && s.problem == keyRunning
}

// modelOutcome is what the Transport must do with a script: how many
// attempts reach the server, and the final status (0 for an error).
// Failures (drops and retried answers but running 409s) count toward
// maxAttempts; running 409s are polls, and the Transport under test waits
// the floor (BaseDelay) after each, with a MaxInProgressWait of maxPolls
// floors, so it makes maxPolls polls and returns the next running 409.
// MaxAttempts 1 retries nothing. No script needs more than
// maxAttempts+maxPolls steps.
func modelOutcome(script []step, maxAttempts, maxPolls int) (attempts, final int) {
	failures, polls := 0, 0
	for i, s := range script {
		attempt := i + 1
		switch {
		case s.running():
			polls++
			if maxAttempts == 1 || polls > maxPolls {
				return attempt, s.status
			}
		case s.drop || s.retried():
			failures++
			if failures >= maxAttempts {
				return attempt, s.status // 0 for a drop
			}
		default:
			return attempt, s.status
		}
	}
	panic("script too short")
}

// TestTransportAgainstModel plays random scripts of answers and dropped
// connections and checks every decision against modelOutcome, plus the
// invariants: one key and one body on every attempt.
func TestTransportAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 13))
	statuses := []int{200, 201, 400, 402, 404, 409, 422, 429, 500, 502, 503, 504}
	retryAfters := []string{"", "", "0", "3600", "soon"}

	var mu sync.Mutex
	var script []step
	var seen []attempt
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, attempt{r.Header.Get(DefaultHeader), body})
		s := script[min(len(seen), len(script))-1] // past the script (a Transport the model does not describe): the last step
		mu.Unlock()
		if s.drop {
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				_ = conn.Close()
			}
			return
		}
		if s.retryAfter != "" {
			w.Header().Set("Retry-After", s.retryAfter)
		}
		if s.problem != "" {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(s.status)
			_, _ = fmt.Fprintf(w, `{"type":"x","title":"t","status":%d,"detail":"d","key_state":%q}`, s.status, s.problem)
			return
		}
		w.WriteHeader(s.status)
	}))
	defer srv.Close()
	base := &http.Transport{DisableKeepAlives: true} // no net/http retry of its own
	defer base.CloseIdleConnections()

	const runs = 300
	for run := range runs {
		maxAttempts := 1 + rng.IntN(5)
		maxPolls := 1 + rng.IntN(6)
		runningOften := rng.IntN(2) == 0 // long runs of polls, to reach MaxInProgressWait
		s := make([]step, maxAttempts+maxPolls)
		for i := range s {
			if runningOften && rng.IntN(3) > 0 {
				s[i] = step{status: http.StatusConflict, retryAfter: []string{"0", "soon"}[rng.IntN(2)], problem: []string{"", keyRunning}[rng.IntN(2)]}
				continue
			}
			if rng.IntN(5) == 0 {
				s[i] = step{drop: true}
				continue
			}
			s[i] = step{status: statuses[rng.IntN(len(statuses))], retryAfter: retryAfters[rng.IntN(len(retryAfters))]}
			if s[i].status == http.StatusConflict {
				s[i].problem = []string{"", keyRunning, keyRunning, keyHeld}[rng.IntN(4)]
			}
		}
		mu.Lock()
		script, seen = s, nil
		mu.Unlock()
		wantAttempts, wantFinal := modelOutcome(s, maxAttempts, maxPolls)

		body := make([]byte, rng.IntN(2048))
		for i := range body {
			body[i] = byte(rng.Uint32())
		}
		const floor = time.Microsecond // BaseDelay: the wait after a running 409 with Retry-After 0 or malformed
		tr := &Transport{Base: base, MaxAttempts: maxAttempts, BaseDelay: floor, MaxDelay: time.Millisecond,
			MaxInProgressWait: time.Duration(maxPolls) * floor}
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, srv.URL, bytes.NewReader(body))
		require.NoError(t, err)
		resp, err := NewClient(tr).Do(req)
		msg := fmt.Sprintf("run %d: script %v, max %d, polls %d", run, s, maxAttempts, maxPolls)
		if wantFinal == 0 {
			require.Error(t, err, msg)
		} else {
			require.NoError(t, err, msg)
			require.Equal(t, wantFinal, resp.StatusCode, msg)
			resp.Body.Close()
		}
		mu.Lock()
		got := append([]attempt(nil), seen...)
		mu.Unlock()
		require.Len(t, got, wantAttempts, msg)
		for i, a := range got {
			require.Equal(t, got[0].key, a.key, "%s: attempt %d", msg, i+1)
			require.Equal(t, body, a.body, "%s: attempt %d", msg, i+1)
		}
	}
}
