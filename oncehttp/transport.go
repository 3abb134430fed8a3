package oncehttp

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Transport is the client side of the Idempotency-Key draft: an
// http.RoundTripper that sends every unsafe request (POST and PATCH by
// default) with an idempotency key, and retries it with the same key and
// the same body when the attempt may not have taken effect or the server
// asks to come back later. It works with any server that implements the
// draft, oncehttp's Middleware and Stripe's API included.
//
// # The key
//
// One key per intent: the request's own header if the caller set it, else
// the key of the request's context (WithKey), else a fresh random key made
// once per RoundTrip and sent with every attempt of it. A generated key
// lives as long as one RoundTrip: a caller that retries the call itself
// (a job re-run after a crash, a user's second click) must make the key
// where that retry is born and pass it with WithKey, for example
// once.DerivedKey("order", orderID).
//
// # Retries
//
// An attempt is retried, after a wait, when it failed without an answer (a
// refused or dropped connection, a reset, an EOF before the response; the
// server may have processed it, which is what the key is for: a server
// that implements the draft does not process it again, and oncehttp's
// Middleware holds the key of a request whose handler panicked), or when
// its status is one of RetryStatus: by default 409, 429, 502, 503 and 504.
// A 409 is retried only with Retry-After. One that is a Problem Details
// document (application/problem+json) with a key_state member is retried
// only when that member is "running" (the Middleware's
// request-in-progress): the first request with the key is still being
// processed, and the retry is a poll (below). A 409 for a held key
// (key_state "held": the outcome is unknown, and a retry once its
// Retry-After passed would run the request again) and a handler's own 409
// (a business conflict, without Retry-After) are returned to the caller,
// the latter with every header its handler set. Any other 409 with
// Retry-After, from a server that is not oncehttp, cannot be told from a
// conflict that asks to come back: it may be the draft's answer while the
// first request with the key is in progress (the draft answers a
// concurrent request 409), so it is retried, but as a failure, counted
// toward MaxAttempts as a 429 or 503 is, never polled. Every other answer
// is final and returned at once, 400, 402 and 422 included. So is an
// answer marked "Idempotent-Replayed: true", whatever its status (a
// handler's own 409 conflict, stored and replayed, say): it is the stored
// answer for the key, which no retry can change. A server's explicit
// advice wins over the status (not over the replay marker):
// "Stripe-Should-Retry: false" makes any answer final, and "true" makes a
// 4xx or 5xx retried (as a failure, below).
//
// A retried running 409 is a poll, not a failure: the first request with
// the key is running, and the Transport waits for it to finish. Polls do
// not count toward MaxAttempts; they are bounded by MaxInProgressWait, the
// sum of the waits planned between them (not the time that passed): a
// poll whose wait would take that sum past it is not made, and the running
// 409 is returned. A poll's wait is its Retry-After, but at least
// BaseDelay (100ms by default, without jitter; also for a Retry-After that
// does not parse), so that "Retry-After: 0" cannot spin. A RetryStatus
// without 409 turns polls off (and every other retry of a 409), and so
// does MaxAttempts 1. Every other retried outcome is a failure (a
// connection error, 429, 502, 503, 504, a 409 that is not a running one,
// a retry Stripe-Should-Retry asks for), and MaxAttempts counts the
// attempts that failed; its wait is the answer's Retry-After when it has
// one, else a capped exponential backoff with jitter. Either wait must be
// at most MaxRetryAfter: an answer that asks for longer ends the retries.
// Retries also stop when the request's context ends, and before a wait
// that would outlast the context's deadline. When retries stop, the last
// answer (or error) is returned as is, and a response that is returned is
// never read or closed by the Transport.
//
// Each retry resends the body byte for byte through req.GetBody (which
// http.NewRequest sets for bytes, strings and their readers). A request
// with a body and no GetBody is sent once, with its key, and not retried.
//
// Requests of other methods pass to Base untouched, without key or retry.
// The caller's request is never modified. A Transport is safe for
// concurrent use; its fields must not change once it is in use. The zero
// value is ready to use.
type Transport struct {
	// Base sends each attempt. Defaults to http.DefaultTransport.
	Base http.RoundTripper

	// Header is the request header that carries the key. Defaults to
	// "Idempotency-Key".
	Header string

	// Bare sends the key as it is instead of as an RFC 8941 sf-string
	// ("quoted"), the form the draft defines. Defaults to false (quoted).
	// oncehttp accepts both; a server that takes the raw header value as
	// the key (as Stripe does) dedups either form, since every attempt
	// sends the same bytes.
	Bare bool

	// Methods lists the guarded methods. Defaults to POST and PATCH.
	Methods []string

	// MaxAttempts caps the attempts of one request that fail (see
	// Retries): the one that makes the count reach it is returned. Polls
	// of a running 409 are not counted; MaxInProgressWait bounds them.
	// Defaults to 5 when zero; 1 attaches the key and never retries, nor
	// polls.
	MaxAttempts int

	// MaxInProgressWait is the longest the Transport waits in total, across
	// polls, for the first request with the key to finish (the sum of the
	// planned waits after running 409s, see Retries); an answer after that
	// is returned to the caller. Defaults to 60s. To poll not at all, leave
	// 409 out of RetryStatus.
	MaxInProgressWait time.Duration

	// BaseDelay is the backoff after the first failed attempt; it doubles
	// for each further failure, up to MaxDelay, and a random part of up to
	// half of it is taken off (jitter), so that clients that failed
	// together do not retry together. It is also the shortest wait between
	// polls of a running 409. Defaults to 100ms.
	BaseDelay time.Duration

	// MaxDelay caps the backoff. Defaults to 5s.
	MaxDelay time.Duration

	// MaxRetryAfter is the longest Retry-After the Transport waits for; an
	// answer that asks for more is returned to the caller. Defaults to 60s.
	MaxRetryAfter time.Duration

	// RetryStatus reports whether an answer with the status is retried.
	// Defaults to DefaultRetryStatus. A 409 it retries is retried only
	// with Retry-After and not for a held key, and polled only when it
	// says the key is running (see Retries); leave 409 out to return every
	// 409 at once, with no polls.
	RetryStatus func(status int) bool

	// NewKey makes the key of a request that has none. Defaults to NewKey
	// (128 random bits).
	NewKey func() string

	// OnRetry, if set, is called before each wait: for logs and metrics.
	OnRetry func(Retry)
}

// Retry describes one retry decision of a Transport.
type Retry struct {
	// Attempt is the number of the attempt that failed (or was answered
	// with a running 409), from 1, polls included.
	Attempt int
	// Key is the idempotency key sent with every attempt.
	Key string
	// Status is the failed attempt's status; 0 when Err is set.
	Status int
	// Err is the failed attempt's error; nil when it had an answer.
	Err error
	// Delay is the wait before the next attempt.
	Delay time.Duration
}

// DefaultRetryStatus is the default Transport.RetryStatus: 409 Conflict
// (the draft's answer while the first request with the key is in
// progress; the Transport retries only that 409, see Transport), 429 Too
// Many Requests, 502 Bad Gateway, 503 Service Unavailable and 504 Gateway
// Timeout. A 500 is not retried: it is an answer the server may have
// stored as final.
func DefaultRetryStatus(status int) bool {
	switch status {
	case http.StatusConflict, http.StatusTooManyRequests,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// NewClient returns an http.Client that sends its requests through t (a
// zero Transport when t is nil). Use the client's Timeout, or the
// request's context, to bound a request with all its retries.
func NewClient(t *Transport) *http.Client {
	if t == nil {
		t = &Transport{}
	}
	return &http.Client{Transport: t}
}

// Replayed reports whether resp is a replay of an answer the server had
// already given for the request's key (the Idempotent-Replayed header), or
// follows a redirect that was (a 303 to the result of a replayed request).
func Replayed(resp *http.Response) bool {
	for r := resp; r != nil; {
		if r.Header.Get(ReplayedHeader) == "true" {
			return true
		}
		if r.Request == nil {
			return false
		}
		r = r.Request.Response
	}
	return false
}

// RoundTrip implements http.RoundTripper; see Transport.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !slices.Contains(t.methods(), req.Method) {
		return t.base().RoundTrip(req)
	}
	header := t.header()
	key, value, err := t.keyFor(req, header)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	ctx := req.Context()
	attempts := t.maxAttempts()
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		attempts = 1 // the body cannot be sent again
	}
	failures := 0            // attempts that failed, the ones MaxAttempts counts
	var polled time.Duration // the waits planned for a running 409, the ones MaxInProgressWait bounds
	for attempt := 1; ; attempt++ {
		r := req.Clone(ctx)
		r.Header.Set(header, value)
		if attempt > 1 && req.GetBody != nil {
			if r.Body, err = req.GetBody(); err != nil {
				return nil, fmt.Errorf("oncehttp: resending the body: %w", err)
			}
		}
		resp, err := t.base().RoundTrip(r)
		retry, poll := t.retryable(ctx, resp, err)
		if !retry || attempts == 1 {
			return resp, err
		}
		var delay time.Duration
		if poll {
			var ok bool
			delay, ok = t.pollDelay(resp)
			if !ok || delay > t.maxInProgressWait()-polled {
				return resp, err
			}
			polled += delay
		} else {
			failures++
			if failures >= attempts {
				return resp, err
			}
			var ok bool
			if delay, ok = t.delay(failures, resp); !ok {
				return resp, err
			}
		}
		if !fitsDeadline(ctx, delay) {
			return resp, err
		}
		info := Retry{Attempt: attempt, Key: key, Err: err, Delay: delay}
		if resp != nil {
			info.Status = resp.StatusCode
			discard(resp)
		}
		if t.OnRetry != nil {
			t.OnRetry(info)
		}
		if err := sleep(ctx, delay); err != nil {
			return nil, fmt.Errorf("oncehttp: retry of %s %s with key %q: %w", req.Method, req.URL.Redacted(), key, err)
		}
	}
}

// retryable reports whether an attempt's outcome calls for another, and
// whether that one is a poll: the outcome is a running 409 (retryConflict),
// which is not a failure of the attempt.
func (t *Transport) retryable(ctx context.Context, resp *http.Response, err error) (retry, poll bool) {
	if err != nil {
		return ctx.Err() == nil && !permanent(err), false
	}
	if strings.EqualFold(resp.Header.Get(ReplayedHeader), "true") {
		return false, false // a stored answer, replayed: every retry gets it again
	}
	switch resp.Header.Get(shouldRetryHeader) {
	case "false":
		return false, false
	case "true":
		return resp.StatusCode >= 400, false
	}
	if !t.retryStatus()(resp.StatusCode) {
		return false, false
	}
	if resp.StatusCode == http.StatusConflict {
		return retryConflict(resp)
	}
	return true, false
}

// maxProblemRead caps what retryConflict reads of a 409's body.
const maxProblemRead = 8 << 10

// retryConflict reports whether a 409 is retried, and whether as a poll.
// A 409 without Retry-After is final (a handler's own conflict, which the
// first execution answers without it and without the replay marker), and
// so is a Problem Details document whose key_state member is other than
// "running" ("held": the outcome is unknown, and a retry once its
// Retry-After passed would run the request again), or that does not
// parse. One whose key_state is "running" (oncehttp's request-in-progress)
// says that the first request with the key is being processed: a poll.
// Any other 409 with Retry-After (the draft's in-progress answer from a
// server that is not oncehttp, or a conflict that asks to come back) is
// retried as a failure, counted toward MaxAttempts. The part of the body
// it reads is put back.
func retryConflict(resp *http.Response) (retry, poll bool) {
	if resp.Header.Get("Retry-After") == "" {
		return false, false
	}
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err != nil || mt != "application/problem+json" || resp.Body == nil {
		return true, false
	}
	body := resp.Body
	head, err := io.ReadAll(io.LimitReader(body, maxProblemRead))
	rest := io.Reader(body)
	if err != nil {
		rest = errReader{err} // the caller reads what was read, then the error
	}
	resp.Body = &rereadBody{Reader: io.MultiReader(bytes.NewReader(head), rest), Closer: body}
	if err != nil {
		return false, false
	}
	var doc struct {
		KeyState *string `json:"key_state"`
	}
	if json.Unmarshal(head, &doc) != nil {
		return false, false // not the document it says it is (or over maxProblemRead)
	}
	switch {
	case doc.KeyState == nil:
		return true, false
	case *doc.KeyState == keyRunning:
		return true, true
	}
	return false, false
}

// rereadBody is a response body whose first bytes were read and put back.
type rereadBody struct {
	io.Reader
	io.Closer
}

// errReader returns its error on every read.
type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// shouldRetryHeader is Stripe's explicit advice on a failed request, which
// overrides the status: "false" (retrying would not help) or "true" (a
// lock timeout, say).
const shouldRetryHeader = "Stripe-Should-Retry"

// permanent reports errors that another attempt cannot cure: a
// certificate the client refuses.
func permanent(err error) bool {
	var verify *tls.CertificateVerificationError
	var unknown x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	return errors.As(err, &verify) || errors.As(err, &unknown) ||
		errors.As(err, &hostname) || errors.As(err, &invalid)
}

// fitsDeadline reports whether a wait of d ends before ctx's deadline.
func fitsDeadline(ctx context.Context, d time.Duration) bool {
	deadline, ok := ctx.Deadline()
	return !ok || time.Until(deadline) > d
}

func sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// discard reads a little of a response that will not be returned, so that
// its connection can be reused, and closes it.
func discard(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

func (t *Transport) base() http.RoundTripper {
	if t.Base != nil {
		return t.Base
	}
	return http.DefaultTransport
}

func (t *Transport) header() string {
	if t.Header != "" {
		return t.Header
	}
	return DefaultHeader
}

func (t *Transport) methods() []string {
	if t.Methods != nil {
		return t.Methods
	}
	return DefaultMethods
}

func (t *Transport) maxAttempts() int {
	if t.MaxAttempts > 0 {
		return t.MaxAttempts
	}
	return 5
}

func (t *Transport) retryStatus() func(int) bool {
	if t.RetryStatus != nil {
		return t.RetryStatus
	}
	return DefaultRetryStatus
}
