package oncehttp

import (
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// delay returns the wait after a failed attempt (numbered from 1) and
// false when the answer asks for a longer wait than MaxRetryAfter.
func (t *Transport) delay(attempt int, resp *http.Response) (time.Duration, bool) {
	if resp != nil {
		if d, ok := retryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
			if d > t.maxRetryAfter() {
				return 0, false
			}
			return d, true
		}
	}
	return t.backoff(attempt), true
}

// pollDelay returns the wait after a running 409: its Retry-After, but at
// least baseDelay (a Retry-After of 0, a date in the past or a malformed
// one waits baseDelay), and false when the answer asks for a longer wait
// than MaxRetryAfter.
func (t *Transport) pollDelay(resp *http.Response) (time.Duration, bool) {
	d, _ := retryAfter(resp.Header.Get("Retry-After"), time.Now())
	if d > t.maxRetryAfter() {
		return 0, false
	}
	return max(d, t.baseDelay()), true
}

// baseDelay is BaseDelay or its default, 100ms: the first backoff, and the
// shortest wait between polls of a running 409 (without jitter).
func (t *Transport) baseDelay() time.Duration {
	if t.BaseDelay > 0 {
		return t.BaseDelay
	}
	return 100 * time.Millisecond
}

func (t *Transport) maxInProgressWait() time.Duration {
	if t.MaxInProgressWait > 0 {
		return t.MaxInProgressWait
	}
	return 60 * time.Second
}

// backoff is BaseDelay·2^(attempt−1), capped at MaxDelay, less a random
// part of up to half ("equal jitter").
func (t *Transport) backoff(attempt int) time.Duration {
	base, ceiling := t.baseDelay(), t.MaxDelay
	if ceiling <= 0 {
		ceiling = 5 * time.Second
	}
	d := base
	for i := 1; i < attempt && d < ceiling; i++ {
		d *= 2
	}
	d = min(d, ceiling)
	half := d / 2
	return d - half + rand.N(half+1)
}

func (t *Transport) maxRetryAfter() time.Duration {
	if t.MaxRetryAfter > 0 {
		return t.MaxRetryAfter
	}
	return 60 * time.Second
}

// retryAfter parses a Retry-After value (RFC 9110 §10.2.3): delay-seconds
// or an HTTP-date, relative to now; a date in the past is 0. It reports
// false for an absent or malformed value.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if v[0] >= '0' && v[0] <= '9' {
		n, err := strconv.ParseUint(v, 10, 63)
		if errors.Is(err, strconv.ErrRange) {
			return 1<<63 - 1, true // longer than anyone waits
		}
		if err != nil {
			return 0, false
		}
		if n > uint64(1<<63-1)/uint64(time.Second) {
			return 1<<63 - 1, true
		}
		return time.Duration(n) * time.Second, true
	}
	at, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(at.Sub(now), 0), true
}
