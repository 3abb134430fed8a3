package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"
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
