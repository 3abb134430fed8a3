package oncehttp

import (
	"bytes"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// stripeClient sends a POST as stripe-go (v86.2.0, github.com/stripe/stripe-go
// at a1e3932) does with its default settings, so that the middleware's
// defaults are tested against the retry rules of a client people use
// without configuring it. It copies, from stripe.go and error.go:
//
//   - one Idempotency-Key for every attempt of a call (NewRequest adds one
//     to a POST that has none);
//   - at most DefaultMaxNetworkRetries (2) retries;
//   - shouldRetry: a connection error is retried; an answer of 400 or more
//     becomes an error (handleResponse, ResponseToError), which is retried
//     unless it is a Stripe API error (a JSON body with an "error" member),
//     whose canRetry is true only for 429 lock_timeout; below 400,
//     Stripe-Should-Retry decides, else nothing is retried (the 409 and
//     5xx branches that follow cannot see a status of 400 or more, which
//     is an error by then). Retry-After is never read;
//   - sleepTime: 500ms·(1+n²) before retry n+1, capped at 5s, less up to a
//     quarter of jitter, at least 500ms.
type stripeClient struct {
	client *http.Client
}

// post sends body to url with key, retrying as stripe-go does, and
// returns the last answer's status and how many attempts were sent.
func (c stripeClient) post(t *testing.T, url, key string, body []byte) (status, attempts int) {
	t.Helper()
	const maxNetworkRetries = 2
	for retry := 0; ; retry++ {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Idempotency-Key", key)
		req.Header.Set("X-User", "buyer")
		attempts++
		resp, err := c.client.Do(req)
		status = 0
		var answer []byte
		if err == nil {
			status = resp.StatusCode
			answer, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		if retry >= maxNetworkRetries || !stripeShouldRetry(resp, answer, err) {
			return status, attempts
		}
		time.Sleep(stripeSleepTime(retry))
	}
}

// stripeShouldRetry is stripe-go's shouldRetry on the outcome of an
// attempt, before the retry count (checked by post).
func stripeShouldRetry(resp *http.Response, body []byte, err error) bool {
	if err != nil {
		return true // every non-Stripe error but too many redirects, a bad scheme or an unknown CA
	}
	if resp.StatusCode >= 400 { // ResponseToError
		var raw struct {
			Error *struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		if json.Unmarshal(body, &raw) != nil || raw.Error == nil {
			return true // not a *stripe.Error: no retrier, retried
		}
		return resp.StatusCode == http.StatusTooManyRequests && raw.Error.Code == "lock_timeout" // (*Error).canRetry
	}
	switch resp.Header.Get("Stripe-Should-Retry") {
	case "false":
		return false
	case "true":
		return true
	}
	return false
}

// stripeSleepTime is stripe-go's sleepTime before retry n+1.
func stripeSleepTime(n int) time.Duration {
	const minDelay, maxDelay = 500 * time.Millisecond, 5 * time.Second
	d := min(minDelay+minDelay*time.Duration(n*n), maxDelay)
	d -= time.Duration(rand.Int64N(int64(d / 4)))
	return max(d, minDelay)
}
