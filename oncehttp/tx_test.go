package oncehttp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/memory"
)

// HandlerTx's decisions around the transaction, on a fake transaction over
// the memory store. Its rows and responses committing together on real
// SQL stores is internal/txtest's RunHTTP, run by each SQL backend.

type fakeTx struct{ commitErr error }

func (t *fakeTx) Commit(context.Context) error   { return t.commitErr }
func (t *fakeTx) Rollback(context.Context) error { return nil }

type otherTx struct{ fakeTx }

// savepoints is the memory store as a store bound to a fakeTx.
type savepoints struct{ backends.Store }

func (savepoints) Savepoint(context.Context) error           { return nil }
func (savepoints) RollbackToSavepoint(context.Context) error { return nil }

// txServer serves a HandlerTx whose transactions begin with begin and
// whose handler answers 201 with a Location; it returns the server and
// the log's lines.
func txServer(t *testing.T, begin func(context.Context) (*fakeTx, backends.Store, error), handler http.HandlerFunc) (*httptest.Server, *bytes.Buffer) {
	t.Helper()
	var logged bytes.Buffer
	m, err := New(once.New(memory.New(nil)), Config{Scope: userScope, Logger: slog.New(slog.NewJSONHandler(&logged, nil))})
	require.NoError(t, err)
	srv := httptest.NewServer(HandlerTx(m, begin, handler))
	t.Cleanup(srv.Close)
	return srv, &logged
}

func TestHandlerTxGivesTheHandlerItsTransaction(t *testing.T) {
	store := memory.New(nil)
	tx := &fakeTx{}
	var got *fakeTx
	var inPlain bool
	srv, _ := txServer(t, func(context.Context) (*fakeTx, backends.Store, error) { return tx, savepoints{store}, nil },
		func(w http.ResponseWriter, r *http.Request) {
			got, _ = Tx[*fakeTx](r.Context())
			_, wrongType := Tx[*otherTx](r.Context())
			require.False(t, wrongType)
			w.WriteHeader(http.StatusCreated)
		})
	require.Equal(t, http.StatusCreated, call(t, srv, "POST", "/", "u", "k", "").status)
	require.Same(t, tx, got)

	m, err := New(once.New(memory.New(nil)), Config{Scope: userScope})
	require.NoError(t, err)
	plain := httptest.NewServer(m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, inPlain = Tx[*fakeTx](r.Context())
	})))
	t.Cleanup(plain.Close)
	require.Equal(t, http.StatusOK, call(t, plain, "POST", "/", "u", "k", "").status)
	require.False(t, inPlain, "no transaction under Handler")
}

// A response whose commit failed is not sent: the client gets 503, and
// the failure is logged.
func TestHandlerTxFailedCommit(t *testing.T) {
	store := memory.New(nil)
	reset := errors.New("connection reset")
	srv, logged := txServer(t, func(context.Context) (*fakeTx, backends.Store, error) {
		return &fakeTx{commitErr: reset}, savepoints{store}, nil
	}, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "/orders/1")
		http.SetCookie(w, &http.Cookie{Name: "session", Value: "s"})
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, "created")
	})
	r := call(t, srv, "POST", "/", "u", "k", "")
	require.Equal(t, http.StatusServiceUnavailable, r.status)
	require.Equal(t, DefaultProblemBase+"store-unavailable", r.problem(t).Type)
	require.Equal(t, "1", r.header.Get("Retry-After"))
	require.Empty(t, r.header.Get("Location"), "nothing of the uncommitted response")
	require.Empty(t, r.header.Get("Set-Cookie"))
	lines := logLines(t, logged)
	require.Len(t, lines, 1)
	require.Equal(t, "commit", lines[0]["op"])
	require.Contains(t, lines[0]["error"], "connection reset")
}

// A begin that fails answers 503 without running the handler, and is
// logged.
func TestHandlerTxFailedBegin(t *testing.T) {
	down := errors.New("no connection")
	srv, logged := txServer(t, func(context.Context) (*fakeTx, backends.Store, error) { return nil, nil, down },
		func(http.ResponseWriter, *http.Request) { t.Error("the handler ran") })
	r := call(t, srv, "POST", "/", "u", "k", "")
	require.Equal(t, http.StatusServiceUnavailable, r.status)
	lines := logLines(t, logged)
	require.Len(t, lines, 1)
	require.Equal(t, "begin", lines[0]["op"])
	require.Contains(t, lines[0]["error"], "no connection")
}
