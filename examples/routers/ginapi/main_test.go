package main

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/stagedoor/once"
	"github.com/stagedoor/once/examples/routers/internal/scenario"
	"github.com/stagedoor/once/oncehttp"
)

func TestMain(m *testing.M) {
	gin.SetMode(gin.TestMode)
	gin.DefaultErrorWriter = io.Discard // gin.Recovery's stack traces of the panic case
	os.Exit(m.Run())
}

func TestScenario(t *testing.T) {
	scenario.Run(t, func(t *testing.T, gate func(string)) scenario.Server {
		r, o, err := newRouter(once.New(nil), gate)
		if err != nil {
			t.Fatal(err)
		}
		return scenario.Server{Handler: r, Runs: o.runs.Load}
	})
}

// TestWrapH: gin.WrapH(mw.Handler(h)) guards a plain http.Handler route.
func TestWrapH(t *testing.T) {
	mw, err := oncehttp.New(once.New(nil), oncehttp.Config{Scope: scope})
	if err != nil {
		t.Fatal(err)
	}
	o := &orders{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.runs.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"order":"42","payment":"p-1","key":"k-1","user":"alice"}`)
	})
	r := gin.New()
	r.Use(authenticate)
	r.POST("/orders/:id/payments", gin.WrapH(mw.Handler(h)))
	s := scenario.Server{Handler: r, Runs: o.runs.Load}
	scenario.Replays(t, s, scenario.Request{Order: "42", Key: "k-1", User: "alice", Body: `{"amount":100}`}, http.StatusCreated)
}

// TestStatusWithoutBody: a gin handler that sets a status and writes no
// body (c.Status) answers, and is replayed with, that status, not 200.
func TestStatusWithoutBody(t *testing.T) {
	mw, err := oncehttp.New(once.New(nil), oncehttp.Config{Scope: scope})
	if err != nil {
		t.Fatal(err)
	}
	o := &orders{}
	r := gin.New()
	r.Use(authenticate)
	r.POST("/orders/:id/payments", Idempotent(mw), func(c *gin.Context) {
		o.runs.Add(1)
		c.Status(http.StatusAccepted)
	})
	s := scenario.Server{Handler: r, Runs: o.runs.Load}
	scenario.Replays(t, s, scenario.Request{Order: "42", Key: "k-1", User: "alice", Body: `{"amount":100}`}, http.StatusAccepted)
}

// renderErrors is gin's common error middleware: handlers record errors
// (c.Error, AbortWithError) and it renders c.Errors after c.Next, here
// with status, a 500 unless the handler set one (-1).
func renderErrors(status int) gin.HandlerFunc {
	return func(c *gin.Context) {
		c.Next()
		if len(c.Errors) > 0 {
			c.JSON(status, gin.H{"error": c.Errors.Last().Error()})
		}
	}
}

// errorServer is a router with before, authenticate, Idempotent, after
// and h on the payment route.
func errorServer(t *testing.T, before, after []gin.HandlerFunc, h func(c *gin.Context)) scenario.Server {
	t.Helper()
	mw, err := oncehttp.New(once.New(nil), oncehttp.Config{Scope: scope})
	if err != nil {
		t.Fatal(err)
	}
	o := &orders{}
	r := gin.New()
	r.Use(append(before, authenticate)...)
	chain := append(append([]gin.HandlerFunc{Idempotent(mw)}, after...), func(c *gin.Context) {
		o.runs.Add(1)
		h(c)
	})
	r.POST("/orders/:id/payments", chain...)
	return scenario.Server{Handler: r, Runs: o.runs.Load}
}

// TestRecordedErrors: a handler's error recorded with c.Error, and no
// body written, is answered as a failure, not as an empty 200 stored and
// replayed to tell every retry the request succeeded. With the error
// renderer before Idempotent (which can no longer change the answer) or
// without one, Idempotent answers it: a 500, which oncehttp holds (the
// retry gets the held key's 409), or the 4xx the handler set, stored and
// replayed. AbortWithError's 402, sent before the renderer ran, is
// replayed with the body and Content-Type the client got. A renderer
// after Idempotent is the answer recorded.
func TestRecordedErrors(t *testing.T) {
	req := scenario.Request{Order: "42", Key: "k-1", User: "alice", Body: `{"amount":100}`}
	dbDown := func(c *gin.Context) { _ = c.Error(errors.New("db down")) }
	for name, tc := range map[string]struct {
		before, after []gin.HandlerFunc
		h             func(*gin.Context)
		status        int
		body          string
	}{
		"CErrorRendererBefore": {before: []gin.HandlerFunc{renderErrors(http.StatusInternalServerError)}, h: dbDown,
			status: http.StatusInternalServerError, body: `{"error":"Internal Server Error"}`},
		"CErrorNoRenderer": {h: dbDown, status: http.StatusInternalServerError, body: `{"error":"Internal Server Error"}`},
		"CErrorRendererAfter": {after: []gin.HandlerFunc{renderErrors(http.StatusInternalServerError)}, h: dbDown,
			status: http.StatusInternalServerError, body: `{"error":"db down"}`},
		"StatusThenCErrorRendererBefore": {before: []gin.HandlerFunc{renderErrors(-1)},
			h:      func(c *gin.Context) { c.Status(http.StatusPaymentRequired); dbDown(c) },
			status: http.StatusPaymentRequired, body: `{"error":"Payment Required"}`},
		"AbortWithErrorRendererBefore": {before: []gin.HandlerFunc{renderErrors(-1)},
			h:      func(c *gin.Context) { _ = c.AbortWithError(http.StatusPaymentRequired, errors.New("card declined")) },
			status: http.StatusPaymentRequired, body: ""},
		"AbortWithErrorRendererAfter": {after: []gin.HandlerFunc{renderErrors(-1)},
			h:      func(c *gin.Context) { _ = c.AbortWithError(http.StatusPaymentRequired, errors.New("card declined")) },
			status: http.StatusPaymentRequired, body: `{"error":"card declined"}`},
	} {
		t.Run(name, func(t *testing.T) {
			s := errorServer(t, tc.before, tc.after, tc.h)
			var first scenario.Response
			if tc.status < 500 {
				first = scenario.Replays(t, s, req, tc.status)
			} else {
				srv := httptest.NewServer(s.Handler)
				defer srv.Close()
				first = scenario.Send(t, srv.URL, req)
				if first.Status != tc.status {
					t.Fatalf("status %d %q, want %d", first.Status, first.Body, tc.status)
				}
				retry := scenario.Send(t, srv.URL, req)
				if retry.Status != http.StatusConflict || !strings.Contains(retry.Body, `"key_state":"held"`) {
					t.Fatalf("retry got %d %q, want the held key's 409", retry.Status, retry.Body)
				}
				if n := s.Runs(); n != 1 {
					t.Fatalf("the handler ran %d times, want 1", n)
				}
			}
			if first.Body != tc.body {
				t.Fatalf("body %q, want %q", first.Body, tc.body)
			}
		})
	}
}
