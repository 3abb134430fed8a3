package oncehttp

import (
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/stagedoor/once"
)

// A handler that panics with an error value that happens to carry a once
// mark (a must-style helper panicking with the error a callee returned)
// still follows OnServerError, as a panic with any other value does: under
// Release the key is freed and a retry runs the handler again. The panic
// value must not become the key's stored answer.
func TestPanicWithMarkedErrorFollowsOnServerError(t *testing.T) {
	var runs atomic.Int64
	srv, _ := panicServer(t, once.New(nil), Config{OnServerError: ReleaseOn(http.StatusInternalServerError)},
		func(w http.ResponseWriter, r *http.Request) {
			if runs.Add(1) == 1 {
				panic(once.Final(errors.New("card declined")))
			}
			w.WriteHeader(http.StatusCreated)
		})
	first := call(t, srv, "POST", "/", "", "k", "x")
	assert.Equal(t, http.StatusInternalServerError, first.status)
	second := call(t, srv, "POST", "/", "", "k", "x")
	assert.Equal(t, http.StatusCreated, second.status, "the panic's Final mark made the released 500 the key's stored answer: %s", second.body)
	assert.Equal(t, int64(2), runs.Load())
}
