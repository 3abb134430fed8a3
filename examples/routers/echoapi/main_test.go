package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/stagedoor/once"
	"github.com/stagedoor/once/examples/routers/internal/scenario"
	"github.com/stagedoor/once/oncehttp"
)

func TestScenario(t *testing.T) {
	scenario.Run(t, func(t *testing.T, gate func(string)) scenario.Server {
		e, o, err := newRouter(once.New(nil), gate)
		if err != nil {
			t.Fatal(err)
		}
		e.Logger.SetOutput(io.Discard) // middleware.Recover's stack traces of the panic case
		return scenario.Server{Handler: e, Runs: o.runs.Load}
	})
}

// TestWrapMiddlewareLosesReturnedErrors shows why Idempotent is not
// echo.WrapMiddleware(mw.Handler): through that wrapper, a handler's
// returned error is answered after oncehttp recorded and stored the empty
// response, so the client gets 200 and so does every retry. If echo's
// wrapper ever answers the error inside, this test fails and Idempotent
// can become that one-liner.
func TestWrapMiddlewareLosesReturnedErrors(t *testing.T) {
	mw, err := oncehttp.New(once.New(nil), oncehttp.Config{Scope: scope})
	if err != nil {
		t.Fatal(err)
	}
	runs := 0
	e := echo.New()
	e.Use(authenticate)
	e.POST("/orders/:id/payments", func(c echo.Context) error {
		runs++
		return echo.NewHTTPError(http.StatusPaymentRequired, "card declined")
	}, echo.WrapMiddleware(mw.Handler))
	srv := httptest.NewServer(e)
	defer srv.Close()
	req := scenario.Request{Order: "42", Key: "k-1", User: "alice", Body: `{"amount":100,"card":"declined"}`}
	for i, replayed := range []string{"", "true"} {
		r := scenario.Send(t, srv.URL, req)
		if r.Status != http.StatusOK || r.Body != "" || r.Header.Get("Idempotent-Replayed") != replayed {
			t.Fatalf("answer %d: %d %q (Idempotent-Replayed %q), want echo.WrapMiddleware's empty 200",
				i+1, r.Status, r.Body, r.Header.Get("Idempotent-Replayed"))
		}
	}
	if runs != 1 {
		t.Fatalf("runs %d", runs)
	}
}

// TestWrapMiddlewarePanicIsAnsweredByOncehttp: through
// echo.WrapMiddleware too, a handler's panic never reaches
// middleware.Recover: oncehttp recovers it inside, answers 500
// request-failed and holds the key, so the retry gets the held key's 409
// and the handler does not run again.
func TestWrapMiddlewarePanicIsAnsweredByOncehttp(t *testing.T) {
	mw, err := oncehttp.New(once.New(nil), oncehttp.Config{Scope: scope})
	if err != nil {
		t.Fatal(err)
	}
	runs := 0
	e := echo.New()
	e.Logger.SetOutput(io.Discard)
	e.Use(middleware.Recover(), authenticate)
	e.POST("/orders/:id/payments", func(c echo.Context) error {
		runs++
		panic("the handler panics")
	}, echo.WrapMiddleware(mw.Handler))
	srv := httptest.NewServer(e)
	defer srv.Close()
	req := scenario.Request{Order: "42", Key: "k-1", User: "alice", Body: `{"amount":100}`}
	first := scenario.Send(t, srv.URL, req)
	if first.Status != http.StatusInternalServerError || !strings.Contains(first.Body, "request-failed") {
		t.Fatalf("first answer %d %q, want oncehttp's 500 request-failed", first.Status, first.Body)
	}
	retry := scenario.Send(t, srv.URL, req)
	if retry.Status != http.StatusConflict || !strings.Contains(retry.Body, `"key_state":"held"`) {
		t.Fatalf("retry %d %q, want the held key's 409", retry.Status, retry.Body)
	}
	if runs != 1 {
		t.Fatalf("runs %d", runs)
	}
}
