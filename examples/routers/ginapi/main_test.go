package main

import (
	"io"
	"net/http"
	"os"
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
