// Package scenario is the test both router examples pass: the same orders
// API (POST /orders/:id/payments, "Authorization: Bearer <user>", JSON body
// {"amount": N, "card": "..."}) served by gin and by echo behind oncehttp,
// checked through a real HTTP server (httptest) on the memory store.
package scenario

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Payment is the body of a 201 answer: which order, which payment the
// handler made (p-1 for its first run, p-2 for its second...), and the
// idempotency key and user the handler saw in its request's context.
type Payment struct {
	Order   string `json:"order"`
	Payment string `json:"payment"`
	Key     string `json:"key"`
	User    string `json:"user"`
}

// Server is what a router example builds for the scenario: its router,
// with gate called by the payment handler (with the order's id, before it
// counts a run; every run after the gate counts, a declined card's too) so that a test can hold a request inside the handler or
// make it panic, and runs, the number of payments the handler made.
type Server struct {
	Handler http.Handler
	Runs    func() int64
}

// New builds a router example for a test; gate may be nil.
type New func(t *testing.T, gate func(order string)) Server

// Run runs every case of the scenario against the routers newServer
// builds, one fresh router and store per case.
func Run(t *testing.T, newServer New) {
	t.Run("RetryReplaysTheFirstAnswer", func(t *testing.T) { retryReplays(t, newServer) })
	t.Run("OtherBodySameKeyIs422", func(t *testing.T) { otherBody(t, newServer) })
	t.Run("MissingKeyIs400", func(t *testing.T) { missingKey(t, newServer) })
	t.Run("PathParamIsInTheFingerprint", func(t *testing.T) { pathParam(t, newServer) })
	t.Run("ScopeIsTheAuthenticatedUser", func(t *testing.T) { scopeIsUser(t, newServer) })
	t.Run("DuplicateWhileRunningIs409", func(t *testing.T) { whileRunning(t, newServer) })
	t.Run("ConcurrentDuplicatesRunOnce", func(t *testing.T) { concurrent(t, newServer) })
	t.Run("RouterErrorAnswerIsStored", func(t *testing.T) { declined(t, newServer) })
	t.Run("PanicHoldsTheKey", func(t *testing.T) { panics(t, newServer) })
}

// Request is one call of the orders API.
type Request struct {
	Order, Key, User, Body string
}

// Response is what the client got.
type Response struct {
	Status int
	Header http.Header
	Body   string
}

// Send makes req to the server at url.
func Send(t *testing.T, url string, req Request) Response {
	t.Helper()
	r, err := send(url, req)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// send is Send for goroutines other than the test's: it returns its error.
func send(url string, req Request) (Response, error) {
	r, err := http.NewRequest(http.MethodPost, url+"/orders/"+req.Order+"/payments", strings.NewReader(req.Body))
	if err != nil {
		return Response{}, err
	}
	r.Header.Set("Content-Type", "application/json")
	if req.Key != "" {
		r.Header.Set("Idempotency-Key", req.Key)
	}
	if req.User != "" {
		r.Header.Set("Authorization", "Bearer "+req.User)
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		return Response{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return Response{}, err
	}
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: string(body)}, nil
}

func start(t *testing.T, newServer New, gate func(string)) (Server, string) {
	t.Helper()
	s := newServer(t, gate)
	srv := httptest.NewServer(s.Handler)
	t.Cleanup(srv.Close)
	return s, srv.URL
}

func payment(t *testing.T, r Response) Payment {
	t.Helper()
	var p Payment
	if err := json.Unmarshal([]byte(r.Body), &p); err != nil {
		t.Fatalf("body %q: %v", r.Body, err)
	}
	return p
}

func wantStatus(t *testing.T, r Response, status int) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d (body %q)", r.Status, status, r.Body)
	}
}

func wantProblem(t *testing.T, r Response, status int) {
	t.Helper()
	wantStatus(t, r, status)
	if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type %q, want application/problem+json", ct)
	}
}

func wantRuns(t *testing.T, s Server, n int64) {
	t.Helper()
	if got := s.Runs(); got != n {
		t.Fatalf("the handler ran %d times, want %d", got, n)
	}
}

func wantReplayOf(t *testing.T, got, first Response) {
	t.Helper()
	if got.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("Idempotent-Replayed %q, want true", got.Header.Get("Idempotent-Replayed"))
	}
	if got.Status != first.Status || got.Body != first.Body {
		t.Fatalf("replay %d %q, first answer %d %q", got.Status, got.Body, first.Status, first.Body)
	}
	for _, h := range []string{"Content-Type", "Location", "Content-Length"} {
		if got.Header.Get(h) != first.Header.Get(h) {
			t.Fatalf("replayed %s %q, first answer's %q", h, got.Header.Get(h), first.Header.Get(h))
		}
	}
}

func retryReplays(t *testing.T, newServer New) {
	s, url := start(t, newServer, nil)
	req := Request{Order: "42", Key: "k-1", User: "alice", Body: `{"amount":100}`}
	first := Send(t, url, req)
	wantStatus(t, first, http.StatusCreated)
	if v := first.Header.Get("Idempotent-Replayed"); v != "" {
		t.Fatalf("first answer has Idempotent-Replayed %q", v)
	}
	if p := payment(t, first); p != (Payment{Order: "42", Payment: "p-1", Key: "k-1", User: "alice"}) {
		t.Fatalf("first answer %+v: the handler did not see the path param, key or user", p)
	}
	if loc := first.Header.Get("Location"); loc != "/orders/42/payments/p-1" {
		t.Fatalf("Location %q", loc)
	}
	retry := Send(t, url, req)
	wantReplayOf(t, retry, first)
	wantRuns(t, s, 1)
}

func otherBody(t *testing.T, newServer New) {
	s, url := start(t, newServer, nil)
	wantStatus(t, Send(t, url, Request{Order: "42", Key: "k-1", User: "alice", Body: `{"amount":100}`}), http.StatusCreated)
	wantProblem(t, Send(t, url, Request{Order: "42", Key: "k-1", User: "alice", Body: `{"amount":999}`}), http.StatusUnprocessableEntity)
	wantRuns(t, s, 1)
}

func missingKey(t *testing.T, newServer New) {
	s, url := start(t, newServer, nil)
	wantProblem(t, Send(t, url, Request{Order: "42", User: "alice", Body: `{"amount":100}`}), http.StatusBadRequest)
	wantRuns(t, s, 0)
}

func pathParam(t *testing.T, newServer New) {
	s, url := start(t, newServer, nil)
	first := Send(t, url, Request{Order: "1", Key: "k-1", User: "alice", Body: `{"amount":100}`})
	wantStatus(t, first, http.StatusCreated)
	if p := payment(t, first); p.Order != "1" {
		t.Fatalf("the handler saw order %q, want 1", p.Order)
	}
	// The same key and body on another order is another request: the
	// router's path param is in the request target the fingerprint covers.
	wantProblem(t, Send(t, url, Request{Order: "2", Key: "k-1", User: "alice", Body: `{"amount":100}`}), http.StatusUnprocessableEntity)
	wantRuns(t, s, 1)
}

func scopeIsUser(t *testing.T, newServer New) {
	s, url := start(t, newServer, nil)
	req := Request{Order: "42", Key: "k-1", Body: `{"amount":100}`}
	req.User = "alice"
	alice := Send(t, url, req)
	req.User = "bob"
	bob := Send(t, url, req)
	// Bob's k-1 is not Alice's: each runs the handler and gets their own
	// payment, which the scope function could only tell apart by reading
	// the user the router's auth middleware put in the request's context.
	wantStatus(t, alice, http.StatusCreated)
	wantStatus(t, bob, http.StatusCreated)
	if a, b := payment(t, alice), payment(t, bob); a.User != "alice" || b.User != "bob" || a.Payment == b.Payment {
		t.Fatalf("alice got %+v, bob got %+v", a, b)
	}
	if v := bob.Header.Get("Idempotent-Replayed"); v != "" {
		t.Fatalf("bob got alice's answer (Idempotent-Replayed %q)", v)
	}
	req.User = ""
	wantProblem(t, Send(t, url, req), http.StatusUnauthorized)
	wantRuns(t, s, 2)
}

func whileRunning(t *testing.T, newServer New) {
	entered, release := make(chan struct{}), make(chan struct{})
	var calls atomic.Int32
	s, url := start(t, newServer, func(string) {
		if calls.Add(1) == 1 { // the first run waits; any other goes on, to be counted
			close(entered)
			<-release
		}
	})
	// Released before the server closes (cleanups run last first), so
	// that a failing case ends instead of waiting for the held request.
	releaseOnce := sync.OnceFunc(func() { close(release) })
	t.Cleanup(releaseOnce)
	req := Request{Order: "42", Key: "k-1", User: "alice", Body: `{"amount":100}`}
	type result struct {
		r   Response
		err error
	}
	firstc := make(chan result, 1)
	go func() {
		r, err := send(url, req)
		firstc <- result{r, err}
	}()
	select {
	case <-entered: // the first request holds the key inside the handler
	case res := <-firstc:
		t.Fatalf("the first request was answered %d %q (%v) without running the handler", res.r.Status, res.r.Body, res.err)
	}
	dup := Send(t, url, req)
	wantProblem(t, dup, http.StatusConflict)
	if dup.Header.Get("Retry-After") == "" {
		t.Fatal("409 without Retry-After")
	}
	releaseOnce()
	res := <-firstc
	if res.err != nil {
		t.Fatal(res.err)
	}
	first := res.r
	wantStatus(t, first, http.StatusCreated)
	wantReplayOf(t, Send(t, url, req), first)
	wantRuns(t, s, 1)
}

func concurrent(t *testing.T, newServer New) {
	s, url := start(t, newServer, nil)
	req := Request{Order: "42", Key: "k-1", User: "alice", Body: `{"amount":100}`}
	const n = 2
	var (
		wg    sync.WaitGroup
		ready sync.WaitGroup
		go1   = make(chan struct{})
		resps [n]Response
		errs  [n]error
	)
	ready.Add(n)
	for i := range n {
		wg.Go(func() {
			ready.Done()
			<-go1
			resps[i], errs[i] = send(url, req)
		})
	}
	ready.Wait()
	close(go1)
	wg.Wait()
	var ran, others int
	for i, r := range resps {
		switch {
		case errs[i] != nil:
			t.Fatal(errs[i])
		case r.Status == http.StatusCreated && r.Header.Get("Idempotent-Replayed") == "":
			ran++
		case r.Status == http.StatusConflict,
			r.Status == http.StatusCreated && r.Header.Get("Idempotent-Replayed") == "true":
			others++
		default:
			t.Fatalf("unexpected answer %d %q", r.Status, r.Body)
		}
	}
	if ran != 1 || others != n-1 {
		t.Fatalf("%d first answers and %d 409s or replays, want 1 and %d", ran, others, n-1)
	}
	wantRuns(t, s, 1)
}

func declined(t *testing.T, newServer New) {
	s, url := start(t, newServer, nil)
	req := Request{Order: "42", Key: "k-1", User: "alice", Body: `{"amount":100,"card":"declined"}`}
	first := Send(t, url, req)
	// The handler answers a declined card with the router's own error
	// response (gin: AbortWithStatusJSON; echo: a returned *echo.HTTPError):
	// a 402 is an answer to the intent, stored and replayed.
	wantStatus(t, first, http.StatusPaymentRequired)
	if !strings.Contains(first.Body, "card declined") {
		t.Fatalf("402 body %q", first.Body)
	}
	wantReplayOf(t, Send(t, url, req), first)
	wantRuns(t, s, 1)
}

func panics(t *testing.T, newServer New) {
	var calls atomic.Int32
	s, url := start(t, newServer, func(string) {
		if calls.Add(1) == 1 {
			panic("the handler's first run panics")
		}
	})
	req := Request{Order: "42", Key: "k-1", User: "alice", Body: `{"amount":100}`}
	// oncehttp answers the panic with a 500 and holds the key: the panic
	// may have come after the side effect, so the retry is told the
	// outcome is unknown (409, key_state "held") and the handler does not
	// run again.
	wantStatus(t, Send(t, url, req), http.StatusInternalServerError)
	second := Send(t, url, req)
	wantStatus(t, second, http.StatusConflict)
	if !strings.Contains(second.Body, `"key_state":"held"`) {
		t.Fatalf("the retry after a panic was not told the key is held: %s", second.Body)
	}
	if second.Header.Get("Retry-After") == "" {
		t.Fatal("the held key's 409 has no Retry-After")
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("the handler was entered %d times, want 1", n)
	}
	wantRuns(t, s, 0) // its one run panicked before the payment
}

// Replays checks that req, sent twice to s, runs s's handler once and that
// the second answer is the first, of the given status, replayed (status,
// body, Content-Type, Location, Content-Length); it returns the first.
func Replays(t *testing.T, s Server, req Request, status int) Response {
	t.Helper()
	srv := httptest.NewServer(s.Handler)
	t.Cleanup(srv.Close)
	first := Send(t, srv.URL, req)
	wantStatus(t, first, status)
	wantReplayOf(t, Send(t, srv.URL, req), first)
	wantRuns(t, s, 1)
	return first
}
