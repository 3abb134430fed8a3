package oncehttp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/reconcile"
)

// TestReconcilerResolvesAMiddlewareKey: a 504 holds the key until resolved
// (the default Hold policy with HoldUntilResolved); retries get 409 and
// never reach the handler; a Reconciler made by NewReconciler resolves the
// key with a response, and every later retry is that response, replayed,
// with only the allow-listed headers, whatever cfg.Codec. A verdict with an error, or with a
// bad status, is not stored: the key stays held and the pass counts it as
// failed.
func TestReconcilerResolvesAMiddlewareKey(t *testing.T) {
	onEveryStore(t, func(t *testing.T, keeper func(...once.Option) *once.Keeper) {
		k := keeper(once.WithHoldFor(once.HoldUntilResolved))
		srv, runs := statusServer(t, k, Config{})
		c := noRedirects(srv)
		key := newKey(t)
		const path = "/status/504"
		require.Equal(t, http.StatusGatewayTimeout, send(t, c, srv, path, key, "").status)
		held := send(t, c, srv, path, key, "")
		require.Equal(t, http.StatusConflict, held.status, "held: the retry is told to wait")

		var verdict atomic.Value // func() (reconcile.Verdict[StoredResponse], error)
		var asked atomic.Int64
		rec, err := NewReconciler(k, func(ctx context.Context, hk reconcile.HeldKey) (reconcile.Verdict[StoredResponse], error) {
			if hk.Scope != "buyer" || hk.Key != key {
				return reconcile.Verdict[StoredResponse]{}, nil // another test's key: left held
			}
			asked.Add(1)
			return verdict.Load().(func() (reconcile.Verdict[StoredResponse], error))()
		}, reconcile.Config{Scope: "buyer", Codec: jsonCodec{}}) // ignored: the middleware's codec is the only one its keys replay
		require.NoError(t, err)
		// pass runs passes until one asks about the key: a pass right after
		// one that left it held may find it still leased (the unlease is
		// 1 ns, rounded up to the store's clock: a millisecond on Redis).
		pass := func() reconcile.Report {
			t.Helper()
			var rep reconcile.Report
			before := asked.Load()
			require.Eventually(t, func() bool {
				var err error
				rep, err = rec.Pass(t.Context())
				require.NoError(t, err)
				return asked.Load() > before
			}, 5*time.Second, 2*time.Millisecond)
			require.Equal(t, before+1, asked.Load())
			return rep
		}

		for name, v := range map[string]reconcile.Verdict[StoredResponse]{
			"an error":   {Settled: true, Err: once.Final(errors.New("declined"))},
			"bad status": {Settled: true, Value: StoredResponse{Status: 42}},
			"a 1xx":      {Settled: true, Value: StoredResponse{Status: http.StatusProcessing}},
		} {
			verdict.Store(func() (reconcile.Verdict[StoredResponse], error) { return v, nil })
			rep := pass()
			require.Equal(t, 0, rep.Resolved, name)
			require.Equal(t, 1, rep.Failed, name)
			require.Equal(t, http.StatusConflict, send(t, c, srv, path, key, "").status, "%s: the key stays held", name)
		}

		verdict.Store(func() (reconcile.Verdict[StoredResponse], error) {
			return reconcile.Verdict[StoredResponse]{Settled: true, Value: StoredResponse{
				Status: http.StatusCreated,
				Header: http.Header{"location": {"/orders/9"}, "Content-Type": {"application/json"}, "Set-Cookie": {"secret=1"}}, // any case
				Body:   []byte(`{"id":9}`),
			}}, nil
		})
		rep := pass()
		require.Equal(t, 1, rep.Resolved)
		for range 2 {
			r := send(t, c, srv, path, key, "")
			require.Equal(t, http.StatusCreated, r.status)
			require.Equal(t, "true", r.header.Get(ReplayedHeader))
			require.Equal(t, "/orders/9", r.header.Get("Location"))
			require.Empty(t, r.header.Get("Set-Cookie"), "never a cookie")
			require.JSONEq(t, `{"id":9}`, r.body)
		}
		n, _ := runs.Load(path)
		require.Equal(t, int64(1), n.(*atomic.Int64).Load(), "the handler ran once")
	})
}

func TestNewReconcilerRejectsNilCheck(t *testing.T) {
	_, err := NewReconciler(once.New(nil), nil, reconcile.Config{})
	var invalid *once.InvalidInputError
	require.ErrorAs(t, err, &invalid)
}

// jsonCodec is a codec other than the middleware's.
type jsonCodec struct{}

func (jsonCodec) Marshal(v any) ([]byte, error) { return json.Marshal(v) }

func (jsonCodec) Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }
